package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// SlowOptions say how slow a SlowStore makes the store it wraps. The zero
// value adds nothing: the store only counts its requests.
type SlowOptions struct {
	// Latency is added to every request, before it reaches the wrapped
	// store: a Get's body is available, and a Put, List, Delete or Compose
	// returns, no sooner than Latency after the call. Concurrent requests
	// wait side by side, as requests to S3 do. Default 0: none.
	Latency time.Duration
	// Jitter adds to each request's latency a further wait drawn
	// uniformly from [0, Jitter]. Default 0: none.
	Jitter time.Duration
	// Seed seeds the jitter's random sequence: stores with the same Seed
	// draw the same sequence of waits (in the order requests are made).
	// Default 0, a seed like any other.
	Seed uint64
	// Bandwidth limits, in bytes per second, the bytes of every request
	// of the store together: Get bodies as they are read, Put bodies and
	// the caller's parts of a Compose as they are consumed. It is a token
	// bucket shared by all requests, so concurrent requests share it.
	// Default 0: unlimited.
	Bandwidth int64
	// Burst is the bucket's capacity in bytes: how much can pass at once
	// after the link was idle, and the most one read moves before it
	// waits. Only with Bandwidth. Default 0: Bandwidth/100 (10 ms worth),
	// at least 64 KiB.
	Burst int64
	// Now is the clock the bucket refills by. Default nil: time.Now.
	Now func() time.Time
	// Sleep waits d, or until ctx is done, when it returns ctx.Err().
	// It is called only for waits longer than 0. Default nil: a timer.
	// Tests give a fake Now and Sleep to see the waits exactly.
	Sleep func(ctx context.Context, d time.Duration) error
}

// minBurst is the smallest default Burst: below it a fast link would wait
// for a timer every few microseconds.
const minBurst = 64 << 10

// Validate reports every bad field at once.
func (o *SlowOptions) Validate() error {
	var errs []error
	if o.Latency < 0 {
		errs = append(errs, fmt.Errorf("Latency %s is negative", o.Latency))
	}
	if o.Jitter < 0 {
		errs = append(errs, fmt.Errorf("Jitter %s is negative", o.Jitter))
	}
	if o.Bandwidth < 0 {
		errs = append(errs, fmt.Errorf("Bandwidth %d bytes/s is negative (0: unlimited)", o.Bandwidth))
	}
	if o.Burst < 0 {
		errs = append(errs, fmt.Errorf("Burst %d bytes is negative (0: the default)", o.Burst))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpoint: slow store options: %w", err)
	}
	return nil
}

// withDefaults returns o with its defaults filled in.
func (o SlowOptions) withDefaults() SlowOptions {
	if o.Bandwidth > 0 && o.Burst == 0 {
		o.Burst = max(o.Bandwidth/100, minBurst)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	return o
}

// SlowStats count a SlowStore's requests and bytes since it was made.
type SlowStats struct {
	// Requests by kind, each counted when it is made (so also those that
	// fail), except those refused for an invalid name before any request.
	// A Compose into a store that is no Composer is the Gets and the Put
	// it is made of.
	Gets, Puts, Lists, Deletes, Composes int64
	// GetBytes were read from Get bodies (from the store); PutBytes were
	// consumed from the bodies of Puts and the caller's parts of Composes
	// (to the store).
	GetBytes, PutBytes int64
	// CopiedBytes are the bytes Composes had the wrapped store copy from
	// objects it holds: they moved within the store, not to or from it.
	CopiedBytes int64
	// LatencyWait and BandwidthWait are the waits of all requests added
	// up (concurrent waits each count: the sum can exceed the time).
	LatencyWait, BandwidthWait time.Duration
}

// Requests returns the number of requests of every kind.
func (s SlowStats) Requests() int64 { return s.Gets + s.Puts + s.Lists + s.Deletes + s.Composes }

// Add returns s plus o, field by field.
func (s SlowStats) Add(o SlowStats) SlowStats {
	return SlowStats{
		Gets: s.Gets + o.Gets, Puts: s.Puts + o.Puts, Lists: s.Lists + o.Lists, Deletes: s.Deletes + o.Deletes,
		Composes: s.Composes + o.Composes, GetBytes: s.GetBytes + o.GetBytes, PutBytes: s.PutBytes + o.PutBytes,
		CopiedBytes: s.CopiedBytes + o.CopiedBytes, LatencyWait: s.LatencyWait + o.LatencyWait,
		BandwidthWait: s.BandwidthWait + o.BandwidthWait,
	}
}

// Sub returns s minus o, field by field: what happened between two
// snapshots.
func (s SlowStats) Sub(o SlowStats) SlowStats {
	return SlowStats{
		Gets: s.Gets - o.Gets, Puts: s.Puts - o.Puts, Lists: s.Lists - o.Lists, Deletes: s.Deletes - o.Deletes,
		Composes: s.Composes - o.Composes, GetBytes: s.GetBytes - o.GetBytes, PutBytes: s.PutBytes - o.PutBytes,
		CopiedBytes: s.CopiedBytes - o.CopiedBytes, LatencyWait: s.LatencyWait - o.LatencyWait,
		BandwidthWait: s.BandwidthWait - o.BandwidthWait,
	}
}

func (s SlowStats) String() string {
	return fmt.Sprintf("GET %d (%d bytes), PUT %d (%d bytes), LIST %d, DELETE %d, COMPOSE %d (%d bytes copied)",
		s.Gets, s.GetBytes, s.Puts, s.PutBytes, s.Lists, s.Deletes, s.Composes, s.CopiedBytes)
}

// SlowStore wraps a Store to behave as one across a network: every
// request waits a latency before it reaches the wrapped store, and the
// bytes of all requests share a bandwidth (SlowOptions). It counts
// requests and bytes (Stats), so that a benchmark over a local store can
// say what it would have asked of S3. It is safe for concurrent use.
//
// A SlowStore is a Composer whatever it wraps. Over a Composer, a Compose
// is one request: it waits the latency once (S3 makes several round
// trips, to start a multipart upload, for each part and to complete it,
// so a real one takes longer), the caller's parts pass through the
// bandwidth, and the ranges the wrapped store copies do not. Over any
// other store, it reads the ranges back and puts the whole, each Get and
// the Put a request of its own, as a store without server-side copies
// does, and reports nothing copied.
type SlowStore struct {
	s Store
	o SlowOptions

	mu sync.Mutex
	// rng draws the jitter. Guarded by mu.
	rng *rand.Rand
	// busyUntil is the bucket as a time: when the link has sent every
	// byte reserved so far. It is never less than Now()-burstTime; a
	// reservation of n bytes moves it n/Bandwidth on. Guarded by mu.
	busyUntil time.Time

	gets, puts, lists, deletes, composes atomic.Int64
	getBytes, putBytes, copiedBytes      atomic.Int64
	latencyWait, bandwidthWait           atomic.Int64 // nanoseconds
}

// NewSlowStore returns s made slow by o (see SlowStore).
func NewSlowStore(s Store, o SlowOptions) (*SlowStore, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	return &SlowStore{s: s, o: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5105_7023))}, nil
}

// registry is the registry of the store it wraps (see Named).
func (s *SlowStore) registry() registryID { return registryOf(s.s) }

// Stats returns the counts so far.
func (s *SlowStore) Stats() SlowStats {
	return SlowStats{
		Gets: s.gets.Load(), Puts: s.puts.Load(), Lists: s.lists.Load(), Deletes: s.deletes.Load(),
		Composes: s.composes.Load(), GetBytes: s.getBytes.Load(), PutBytes: s.putBytes.Load(),
		CopiedBytes: s.copiedBytes.Load(), LatencyWait: time.Duration(s.latencyWait.Load()),
		BandwidthWait: time.Duration(s.bandwidthWait.Load()),
	}
}

// Put implements Store.
func (s *SlowStore) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if err := ValidName(name); err != nil {
		return err
	}
	s.puts.Add(1)
	if err := s.latency(ctx, "put", name); err != nil {
		return err
	}
	return s.s.Put(ctx, name, s.throttled(ctx, r, "put", name, &s.putBytes), size)
}

// Get implements Store.
func (s *SlowStore) Get(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	s.gets.Add(1)
	if err := s.latency(ctx, "get", name); err != nil {
		return nil, err
	}
	rc, err := s.s.Get(ctx, name, off, length)
	if err != nil {
		return nil, err
	}
	return &slowBody{slowReader: s.throttled(ctx, rc, "get", name, &s.getBytes), c: rc}, nil
}

// List implements Store.
func (s *SlowStore) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	s.lists.Add(1)
	if err := s.latency(ctx, "list", prefix); err != nil {
		return nil, err
	}
	return s.s.List(ctx, prefix)
}

// Delete implements Store.
func (s *SlowStore) Delete(ctx context.Context, name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	s.deletes.Add(1)
	if err := s.latency(ctx, "delete", name); err != nil {
		return err
	}
	return s.s.Delete(ctx, name)
}

// Compose implements Composer (see SlowStore).
func (s *SlowStore) Compose(ctx context.Context, name string, parts []Part) (int64, error) {
	c, ok := s.s.(Composer)
	if !ok {
		return 0, composeThrough(ctx, s, name, parts)
	}
	if err := ValidName(name); err != nil {
		return 0, err
	}
	s.composes.Add(1)
	if err := s.latency(ctx, "compose", name); err != nil {
		return 0, err
	}
	slow := make([]Part, len(parts))
	for i, p := range parts {
		if p.R != nil {
			p.R = s.throttled(ctx, p.R, "compose", name, &s.putBytes)
		}
		slow[i] = p
	}
	copied, err := c.Compose(ctx, name, slow)
	if err != nil {
		return 0, err
	}
	s.copiedBytes.Add(copied)
	return copied, nil
}

// latency waits the latency of one request, with its jitter.
func (s *SlowStore) latency(ctx context.Context, op, name string) error {
	d := s.o.Latency
	if s.o.Jitter > 0 {
		s.mu.Lock()
		d += time.Duration(s.rng.Int64N(int64(s.o.Jitter) + 1))
		s.mu.Unlock()
	}
	if d <= 0 {
		return nil
	}
	s.latencyWait.Add(int64(d))
	if err := s.o.Sleep(ctx, d); err != nil {
		return fmt.Errorf("checkpoint: %s %s: waiting out the store's latency: %w", op, name, err)
	}
	return nil
}

// reserve takes n bytes from the bucket and returns how long to wait
// before they have passed, and how much the reservation moved the bucket
// on (to give back if the wait is abandoned).
func (s *SlowStore) reserve(n int) (wait, cost time.Duration) {
	// Ceiling division: a read of one byte still costs something.
	bw := s.o.Bandwidth
	cost = time.Duration((int64(n)*int64(time.Second) + bw - 1) / bw)
	burst := time.Duration(s.o.Burst * int64(time.Second) / bw)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	if floor := now.Add(-burst); s.busyUntil.Before(floor) {
		s.busyUntil = floor // an idle link saves up at most a burst
	}
	s.busyUntil = s.busyUntil.Add(cost)
	return max(s.busyUntil.Sub(now), 0), cost
}

// unreserve gives back a reservation whose wait was abandoned.
func (s *SlowStore) unreserve(cost time.Duration) {
	s.mu.Lock()
	s.busyUntil = s.busyUntil.Add(-cost)
	s.mu.Unlock()
}

// throttled returns r passed through the bandwidth, counting its bytes
// into count.
func (s *SlowStore) throttled(ctx context.Context, r io.Reader, op, name string, count *atomic.Int64) *slowReader {
	return &slowReader{ctx: ctx, s: s, r: r, op: op, name: name, count: count}
}

// slowReader reads at most a burst at a time, and returns what it read
// once the bucket lets it pass.
type slowReader struct {
	ctx      context.Context
	s        *SlowStore
	r        io.Reader
	op, name string
	count    *atomic.Int64
}

func (r *slowReader) Read(p []byte) (int, error) {
	bw := r.s.o.Bandwidth
	if bw > 0 && int64(len(p)) > r.s.o.Burst {
		p = p[:r.s.o.Burst]
	}
	n, err := r.r.Read(p)
	if n > 0 && bw > 0 {
		wait, cost := r.s.reserve(n)
		if wait > 0 {
			r.s.bandwidthWait.Add(int64(wait))
			if serr := r.s.o.Sleep(r.ctx, wait); serr != nil {
				r.s.unreserve(cost)
				return 0, fmt.Errorf("checkpoint: %s %s: waiting for the store's bandwidth: %w", r.op, r.name, serr)
			}
		}
	}
	r.count.Add(int64(n))
	return n, err
}

// slowBody is a Get's body.
type slowBody struct {
	*slowReader
	c io.Closer
}

func (b *slowBody) Close() error { return b.c.Close() }
