package checkpoint_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/storetest"
	"github.com/strata-db/strata/vfs"
)

// notComposer hides the Composer of the store it holds.
type notComposer struct{ checkpoint.Store }

// TestSlowStoreConformance: a slow store, over a store that composes and
// over one that does not, is a store like any other.
func TestSlowStoreConformance(t *testing.T) {
	for _, c := range []struct {
		name string
		wrap func(checkpoint.Store) checkpoint.Store
	}{
		{"composer", func(s checkpoint.Store) checkpoint.Store { return s }},
		{"not-composer", func(s checkpoint.Store) checkpoint.Store { return notComposer{s} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) checkpoint.Store {
				local, err := checkpoint.NewLocalStoreFS(vfs.NewMem(), "store")
				require.NoError(t, err)
				s, err := checkpoint.NewSlowStore(c.wrap(local), checkpoint.SlowOptions{
					Latency: 20 * time.Microsecond, Jitter: 20 * time.Microsecond, Bandwidth: 4 << 30})
				require.NoError(t, err)
				return s
			})
		})
	}
}

// fakeClock is a clock that moves only when slept on, and records every
// wait it is asked for.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// take returns the waits so far and forgets them.
func (c *fakeClock) take() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.waits
	c.waits = nil
	return w
}

func (c *fakeClock) options(o checkpoint.SlowOptions) checkpoint.SlowOptions {
	o.Now, o.Sleep = c.Now, c.Sleep
	return o
}

func newSlow(t *testing.T, inner checkpoint.Store, o checkpoint.SlowOptions) *checkpoint.SlowStore {
	t.Helper()
	if inner == nil {
		var err error
		inner, err = checkpoint.NewLocalStoreFS(vfs.NewMem(), "store")
		require.NoError(t, err)
	}
	s, err := checkpoint.NewSlowStore(inner, o)
	require.NoError(t, err)
	return s
}

func readAll(t *testing.T, s checkpoint.Store, name string, off, n int64) string {
	t.Helper()
	rc, err := s.Get(context.Background(), name, off, n)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b)
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// TestSlowStoreLatencyAndCounts: every request waits the latency once,
// failed ones too, names refused before any request not at all; the
// counts and bytes are exact.
func TestSlowStoreLatencyAndCounts(t *testing.T) {
	ctx := context.Background()
	for _, composer := range []bool{true, false} {
		clock := newFakeClock()
		local, err := checkpoint.NewLocalStoreFS(vfs.NewMem(), "store")
		require.NoError(t, err)
		var inner checkpoint.Store = local
		if !composer {
			inner = notComposer{local}
		}
		const lat = 20 * time.Millisecond
		s := newSlow(t, inner, clock.options(checkpoint.SlowOptions{Latency: lat}))

		require.NoError(t, s.Put(ctx, "a/x", strings.NewReader("0123456789"), 10))
		require.NoError(t, s.Put(ctx, "a/y", strings.NewReader("abc"), 3))
		require.Equal(t, repeat(lat, 2), clock.take())
		require.Equal(t, "3456", readAll(t, s, "a/x", 3, 4))
		require.Equal(t, "abc", readAll(t, s, "a/y", 0, -1))
		_, err = s.Get(ctx, "a/none", 0, -1)
		require.ErrorIs(t, err, checkpoint.ErrNotExist)
		require.Equal(t, repeat(lat, 3), clock.take(), "a Get of a missing object is a request too")
		list, err := s.List(ctx, "a/")
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.NoError(t, s.Delete(ctx, "a/y"))
		require.Equal(t, repeat(lat, 2), clock.take())
		require.Error(t, s.Put(ctx, "../up", strings.NewReader("x"), 1))
		_, err = s.Get(ctx, "/abs", 0, -1)
		require.Error(t, err)
		require.Error(t, s.Delete(ctx, "a//b"))
		require.Empty(t, clock.take(), "a name refused before any request waits nothing")

		copied, err := s.Compose(ctx, "a/z", []checkpoint.Part{
			{Object: "a/x", Offset: 2, Length: 3}, {R: strings.NewReader("--"), Length: 2}, {Object: "a/x", Offset: 8, Length: 2}})
		require.NoError(t, err)
		require.Equal(t, "234--89", readAll(t, s, "a/z", 0, -1))

		want := checkpoint.SlowStats{Gets: 4, Puts: 2, Lists: 1, Deletes: 1, GetBytes: 4 + 3 + 7, PutBytes: 10 + 3 + 2}
		if composer {
			// One request; the stored ranges move within the store.
			require.Equal(t, int64(5), copied)
			require.Equal(t, repeat(lat, 2), clock.take(), "the compose and the read after it")
			want.Composes, want.CopiedBytes = 1, 5
		} else {
			// Two ranges read back and the whole put: three requests, and
			// the ranges' bytes go both ways.
			require.Zero(t, copied)
			require.Equal(t, repeat(lat, 4), clock.take(), "two gets and a put, and the read after it")
			want.Gets += 2
			want.Puts++
			want.GetBytes += 5
			want.PutBytes += 5
		}
		want.LatencyWait = time.Duration(want.Requests()) * lat
		require.Equal(t, want, s.Stats(), "composer %v", composer)
	}
}

// TestSlowStoreJitter: each request waits the latency and a jitter in
// [0, Jitter]; the same seed draws the same waits.
func TestSlowStoreJitter(t *testing.T) {
	ctx := context.Background()
	const lat, jit = 10 * time.Millisecond, 5 * time.Millisecond
	waits := func(seed uint64) []time.Duration {
		clock := newFakeClock()
		s := newSlow(t, nil, clock.options(checkpoint.SlowOptions{Latency: lat, Jitter: jit, Seed: seed}))
		for range 50 {
			_, err := s.List(ctx, "")
			require.NoError(t, err)
		}
		w := clock.take()
		var sum time.Duration
		for _, d := range w {
			sum += d
		}
		require.Equal(t, sum, s.Stats().LatencyWait)
		return w
	}
	a := waits(7)
	require.Len(t, a, 50)
	distinct := map[time.Duration]bool{}
	for _, d := range a {
		require.True(t, d >= lat && d <= lat+jit, "wait %s outside [%s, %s]", d, lat, lat+jit)
		distinct[d] = true
	}
	require.Greater(t, len(distinct), 1, "the jitter varies")
	require.Equal(t, a, waits(7), "the same seed draws the same waits")
	require.NotEqual(t, a, waits(8))
}

// TestSlowStoreBandwidth: the bucket lets a burst pass at once, then one
// byte per 1/Bandwidth, whoever reads; a read takes at most a burst; an
// idle link saves up at most a burst.
func TestSlowStoreBandwidth(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	// 1000 bytes/s, bursts of 100 bytes: 100 bytes cost 100 ms.
	s := newSlow(t, nil, clock.options(checkpoint.SlowOptions{Bandwidth: 1000, Burst: 100}))
	const ms = time.Millisecond
	data := strings.Repeat("d", 1000)

	// A Put of 1000 bytes: ten reads of a burst, the first free.
	require.NoError(t, s.Put(ctx, "obj", strings.NewReader(data), 1000))
	require.Equal(t, repeat(100*ms, 9), clock.take())

	// Two Gets read in turn share the link.
	clock.advance(100 * ms)
	a, err := s.Get(ctx, "obj", 0, -1)
	require.NoError(t, err)
	b, err := s.Get(ctx, "obj", 0, 300)
	require.NoError(t, err)
	buf := make([]byte, 1000)
	n, err := a.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 100, n, "a read takes at most a burst")
	require.Empty(t, clock.take(), "the link was idle for one burst")
	for range 2 {
		n, err = b.Read(buf[:150])
		require.NoError(t, err)
		require.Equal(t, 100, n)
		n, err = a.Read(buf[:50])
		require.NoError(t, err)
		require.Equal(t, 50, n)
	}
	require.Equal(t, []time.Duration{100 * ms, 50 * ms, 100 * ms, 50 * ms}, clock.take())
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())

	// A long idle spell saves up one burst, no more.
	clock.advance(time.Hour)
	require.Equal(t, data[:350], readAll(t, s, "obj", 0, 350))
	require.Equal(t, []time.Duration{100 * ms, 100 * ms, 50 * ms}, clock.take())
	// A byte costs a millisecond, a part of one rounded up.
	require.NoError(t, s.Put(ctx, "one", strings.NewReader("x"), 1))
	require.Equal(t, []time.Duration{ms}, clock.take())

	st := s.Stats()
	require.Equal(t, int64(1000+1), st.PutBytes)
	require.Equal(t, int64(100+2*(100+50)+350), st.GetBytes)
	require.Equal(t, (900+300+250+1)*ms, st.BandwidthWait)
	require.Zero(t, st.LatencyWait)
}

// TestSlowStoreComposeBandwidth: the parts a Compose sends pass through
// the bandwidth; the ranges the store copies do not.
func TestSlowStoreComposeBandwidth(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := newSlow(t, nil, clock.options(checkpoint.SlowOptions{Bandwidth: 1000, Burst: 100}))
	require.NoError(t, s.Put(ctx, "src", strings.NewReader(strings.Repeat("s", 100)), 100))
	require.Empty(t, clock.take())
	clock.advance(time.Second)
	copied, err := s.Compose(ctx, "out", []checkpoint.Part{
		{Object: "src", Length: 100}, {R: strings.NewReader(strings.Repeat("r", 300)), Length: 300}})
	require.NoError(t, err)
	require.Equal(t, int64(100), copied)
	require.Equal(t, repeat(100*time.Millisecond, 2), clock.take(), "300 bytes sent, 100 of them a burst")
	st := s.Stats()
	require.Equal(t, int64(400), st.PutBytes)
	require.Equal(t, int64(100), st.CopiedBytes)
	require.Zero(t, st.GetBytes)
}

// TestSlowStoreConcurrentLatency: concurrent requests wait their latency
// side by side: every one of them is in its wait at once.
func TestSlowStoreConcurrentLatency(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	waiting := 0
	all := make(chan struct{})
	sleep := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waiting++
		if waiting == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s := newSlow(t, nil, checkpoint.SlowOptions{Latency: time.Hour, Sleep: sleep})
	// Should the requests wait one after the other, the first would wait
	// alone until this context ends the test.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = s.List(ctx, "") })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(n), s.Stats().Lists)
	require.Equal(t, n*time.Hour, s.Stats().LatencyWait)
}

// TestSlowStoreCancel: a request whose context ends while it waits, for
// the latency or for bandwidth, returns the context's error, and a Put
// so ended leaves no object.
func TestSlowStoreCancel(t *testing.T) {
	// The real timer: an hour's latency ends with the context.
	s := newSlow(t, nil, checkpoint.SlowOptions{Latency: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	err := s.Put(ctx, "obj", strings.NewReader("x"), 1)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "latency")

	// A wait the context ends while it is under way.
	entered := make(chan time.Duration)
	sleep := func(ctx context.Context, d time.Duration) error {
		entered <- d
		<-ctx.Done()
		return ctx.Err()
	}
	local, err := checkpoint.NewLocalStoreFS(vfs.NewMem(), "store")
	require.NoError(t, err)
	require.NoError(t, local.Put(context.Background(), "old", strings.NewReader(strings.Repeat("o", 200)), 200))
	s = newSlow(t, local, checkpoint.SlowOptions{Latency: time.Hour, Sleep: sleep})
	for _, op := range []func(ctx context.Context) error{
		func(ctx context.Context) error { return s.Put(ctx, "new", strings.NewReader("x"), 1) },
		func(ctx context.Context) error { _, err := s.Get(ctx, "old", 0, -1); return err },
		func(ctx context.Context) error { _, err := s.List(ctx, ""); return err },
		func(ctx context.Context) error { return s.Delete(ctx, "old") },
		func(ctx context.Context) error {
			_, err := s.Compose(ctx, "new", []checkpoint.Part{{Object: "old", Length: 1}})
			return err
		},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- op(ctx) }()
		require.Equal(t, time.Hour, <-entered)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	}
	require.Equal(t, checkpoint.SlowStats{Gets: 1, Puts: 1, Lists: 1, Deletes: 1, Composes: 1, LatencyWait: 5 * time.Hour}, s.Stats())

	// Bandwidth: a Put and a Get body cut off while waiting for the link.
	clock := newFakeClock()
	s = newSlow(t, local, checkpoint.SlowOptions{Bandwidth: 100, Burst: 100, Now: clock.Now, Sleep: sleep})
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Put(ctx, "new", strings.NewReader(strings.Repeat("n", 200)), 200) }()
	require.Equal(t, time.Second, <-entered, "the second 100 bytes wait a second")
	cancel()
	err = <-done
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "bandwidth")
	ctx, cancel = context.WithCancel(context.Background())
	rc, err := s.Get(ctx, "old", 0, -1)
	require.NoError(t, err)
	go func() { _, err := io.ReadAll(rc); done <- err }()
	// The Put's abandoned 100 bytes were given back: the link is busy
	// with its first 100 only.
	require.Equal(t, time.Second, <-entered)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.NoError(t, rc.Close())
	list, err := local.List(context.Background(), "")
	require.NoError(t, err)
	require.Equal(t, []checkpoint.ObjectInfo{{Name: "old", Size: 200}}, list, "no object from a cancelled Put")
}

func TestSlowOptionsValidate(t *testing.T) {
	local, err := checkpoint.NewLocalStoreFS(vfs.NewMem(), "store")
	require.NoError(t, err)
	_, err = checkpoint.NewSlowStore(local, checkpoint.SlowOptions{Latency: -1, Jitter: -2, Bandwidth: -3, Burst: -4})
	for _, field := range []string{"Latency", "Jitter", "Bandwidth", "Burst"} {
		require.ErrorContains(t, err, field)
	}
	o := checkpoint.SlowOptions{}
	require.NoError(t, o.Validate(), "the zero value works")
}

// TestSlowStatsArithmetic: Sub undoes Add, and String names every kind.
func TestSlowStatsArithmetic(t *testing.T) {
	a := checkpoint.SlowStats{Gets: 4, Puts: 2, Lists: 1, Deletes: 1, Composes: 1, GetBytes: 14, PutBytes: 15, CopiedBytes: 5,
		LatencyWait: time.Second, BandwidthWait: time.Millisecond}
	b := checkpoint.SlowStats{Gets: 1, Puts: 1, Lists: 1, Deletes: 1, Composes: 1, GetBytes: 1, PutBytes: 1, CopiedBytes: 1,
		LatencyWait: 1, BandwidthWait: 1}
	require.Equal(t, a, a.Add(b).Sub(b))
	require.Equal(t, int64(9), a.Requests())
	require.Equal(t, "GET 4 (14 bytes), PUT 2 (15 bytes), LIST 1, DELETE 1, COMPOSE 1 (5 bytes copied)", a.String())
}
