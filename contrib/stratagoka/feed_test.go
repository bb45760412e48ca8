package stratagoka_test

import (
	"sync"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
)

// goka's tester hands a topic's messages to consumers only while a test
// pushes input through it, so a processor starting on a table topic that
// already holds messages never finishes recovering. tableFeed is the
// piece of Kafka the tester lacks: a consumer that serves one table topic
// from a slice, at once, and leaves every other topic to the tester's
// consumer.
type tableFeed struct {
	topic string
	// msgs are the topic's messages; msgs[i] has offset i.
	msgs []*sarama.ConsumerMessage
}

// builder wraps the tester's consumer builder.
func (f *tableFeed) builder(inner goka.SaramaConsumerBuilder) goka.SaramaConsumerBuilder {
	return func(brokers []string, clientID string) (sarama.Consumer, error) {
		c, err := inner(brokers, clientID)
		if err != nil {
			return nil, err
		}
		return &feedConsumer{Consumer: c, feed: f}, nil
	}
}

type feedConsumer struct {
	sarama.Consumer
	feed *tableFeed
}

func (c *feedConsumer) ConsumePartition(topic string, partition int32, offset int64) (sarama.PartitionConsumer, error) {
	if topic != c.feed.topic {
		return c.Consumer.ConsumePartition(topic, partition, offset)
	}
	pc := &feedPartition{
		hwm:      int64(len(c.feed.msgs)),
		messages: make(chan *sarama.ConsumerMessage, 1024),
		errors:   make(chan *sarama.ConsumerError),
		done:     make(chan struct{}),
	}
	go func() {
		// As sarama's: the channels close once AsyncClose is called.
		defer close(pc.errors)
		defer close(pc.messages)
		for _, m := range c.feed.msgs[min(max(offset, 0), pc.hwm):] {
			select {
			case pc.messages <- m:
			case <-pc.done:
				return
			}
		}
		<-pc.done
	}()
	return pc, nil
}

type feedPartition struct {
	hwm      int64
	messages chan *sarama.ConsumerMessage
	errors   chan *sarama.ConsumerError
	done     chan struct{}
	once     sync.Once
}

func (p *feedPartition) AsyncClose()                              { p.once.Do(func() { close(p.done) }) }
func (p *feedPartition) Close() error                             { p.AsyncClose(); return nil }
func (p *feedPartition) Messages() <-chan *sarama.ConsumerMessage { return p.messages }
func (p *feedPartition) Errors() <-chan *sarama.ConsumerError     { return p.errors }
func (p *feedPartition) HighWaterMarkOffset() int64               { return p.hwm }
func (p *feedPartition) Pause()                                   {}
func (p *feedPartition) Resume()                                  {}
func (p *feedPartition) IsPaused() bool                           { return false }
