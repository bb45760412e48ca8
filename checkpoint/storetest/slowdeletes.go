package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/strata-db/strata/checkpoint"
)

// SlowDeletes is a Store whose Deletes each take Delay, as a round trip
// to a remote store would, and that records how many were in flight at
// once: a test of deletions made side by side checks MaxInFlight.
type SlowDeletes struct {
	checkpoint.Store
	Delay time.Duration

	mu            sync.Mutex
	inFlight, max int
}

// Delete waits Delay, then deletes name from the Store within.
func (s *SlowDeletes) Delete(ctx context.Context, name string) error {
	s.mu.Lock()
	s.inFlight++
	s.max = max(s.max, s.inFlight)
	s.mu.Unlock()
	time.Sleep(s.Delay)
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	return s.Store.Delete(ctx, name)
}

// MaxInFlight returns the most Deletes that were in flight at once.
func (s *SlowDeletes) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}
