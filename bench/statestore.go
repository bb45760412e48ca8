package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/checkpoint"
)

// StoreStats are the requests a step of the statebackend workload made
// of its stores, and their bytes, summed over the stores (from
// checkpoint.SlowStats).
type StoreStats struct {
	Gets     int64 `json:"gets"`
	Puts     int64 `json:"puts"`
	Lists    int64 `json:"lists"`
	Deletes  int64 `json:"deletes"`
	Composes int64 `json:"composes"`
	// GetBytes came from the stores (Get bodies); PutBytes went to them
	// (Put bodies and the bytes Composes sent).
	GetBytes int64 `json:"get_bytes"`
	PutBytes int64 `json:"put_bytes"`
	// CopiedBytes were copied by the stores from objects they held
	// (Compose), moving neither way.
	CopiedBytes int64 `json:"copied_bytes"`
}

func storeStatsOf(s checkpoint.SlowStats) StoreStats {
	return StoreStats{Gets: s.Gets, Puts: s.Puts, Lists: s.Lists, Deletes: s.Deletes, Composes: s.Composes,
		GetBytes: s.GetBytes, PutBytes: s.PutBytes, CopiedBytes: s.CopiedBytes}
}

// stateStores are the old instances' stores: views of one local store in
// the run's directory (or one prefix of an S3 bucket), each instance's
// with a link of its own made as slow as Spec.StoreLatency and
// Spec.StoreBandwidth say, counting its requests, and a checkpoint
// registry of its own (checkpoint.Named, oldRegistry): the instances
// share one store as the instances of a job do, so that a new instance
// can reference the files of several (a rescale by reference).
type stateStores struct {
	slow [stateOldInstances]*checkpoint.SlowStore
	// stores are the instances' registries: slow, each viewed as its
	// own registry.
	stores [stateOldInstances]checkpoint.Store
	// inner is the store without the added latency.
	inner checkpoint.Store
	// db are the databases' own views of the stores (shared mode).
	db [stateOldInstances]*traceStore
}

// oldRegistry names old instance i's registry in the store.
func oldRegistry(i int) string { return fmt.Sprintf("op-%d", i) }

// openStateStores makes the store of the old instances in dir.
func openStateStores(spec *Spec, dir string) (*stateStores, error) {
	local, err := newStateStore(spec, dir)
	if err != nil {
		return nil, err
	}
	ss := &stateStores{inner: local}
	for i := range ss.slow {
		// Each instance has a link of its own, as each instance of a job
		// would on its own machine.
		s, err := checkpoint.NewSlowStore(local, checkpoint.SlowOptions{
			Latency: spec.StoreLatency, Bandwidth: spec.StoreBandwidth, Seed: uint64(i)})
		if err != nil {
			return nil, err
		}
		ss.slow[i] = s
		if ss.stores[i], err = checkpoint.Named(s, oldRegistry(i)); err != nil {
			return nil, err
		}
		ss.db[i] = &traceStore{s: s}
	}
	return ss, nil
}

// dbView returns the view of old instance i's registry through its
// database's store (ss.db[i]), to open its checkpoints from.
func (ss *stateStores) dbView(i int) (checkpoint.Store, error) {
	return checkpoint.Named(ss.db[i], oldRegistry(i))
}

// newStateStore makes the store of a run in dir: a local store in dir, or
// (Spec.StoreS3) a prefix of its own in the bucket.
func newStateStore(spec *Spec, dir string) (checkpoint.Store, error) {
	if spec.StoreS3 == "" {
		return checkpoint.NewLocalStore(filepath.Join(dir, "store"))
	}
	u, err := url.Parse(spec.StoreS3)
	if err != nil {
		return nil, fmt.Errorf("store_s3: %w", err)
	}
	bucket := strings.Trim(u.Path, "/")
	u.Path = ""
	s, err := checkpoint.NewS3Store(checkpoint.S3Options{
		Endpoint: u.String(), Bucket: bucket,
		Prefix:    fmt.Sprintf("kvbench-%d-%s/store", time.Now().UnixNano(), filepath.Base(dir)),
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		Region: os.Getenv("AWS_REGION"),
	})
	if err != nil {
		return nil, fmt.Errorf("store_s3: %w", err)
	}
	if err := s.EnsureBucket(context.Background()); err != nil {
		return nil, fmt.Errorf("store_s3: %w", err)
	}
	return s, nil
}

// removeS3 deletes the objects of the stores in an S3 bucket
// (Spec.StoreS3); local stores go with the run's directory.
func (ss *stateStores) removeS3(ctx context.Context, spec *Spec) error {
	if spec.StoreS3 == "" {
		return nil
	}
	s := ss.inner
	if s == nil {
		return nil
	}
	objs, err := s.List(ctx, "")
	if err != nil {
		return fmt.Errorf("store_s3: list the run's objects: %w", err)
	}
	var errs []error
	for _, o := range objs {
		if err := s.Delete(ctx, o.Name); err != nil {
			errs = append(errs, fmt.Errorf("store_s3: delete %s: %w", o.Name, err))
			break
		}
	}
	return errors.Join(errs...)
}

// stats returns the stores' counts so far, summed.
func (ss *stateStores) stats() checkpoint.SlowStats {
	var sum checkpoint.SlowStats
	for _, s := range ss.slow {
		sum = sum.Add(s.Stats())
	}
	return sum
}

// since returns what the stores did since before, a snapshot of stats.
func (ss *stateStores) since(before checkpoint.SlowStats) StoreStats {
	return storeStatsOf(ss.stats().Sub(before))
}

// dbStats returns the databases' own requests so far, summed.
func (ss *stateStores) dbStats() StoreStats {
	var sum StoreStats
	for _, t := range ss.db {
		sum = sum.add(t.stats())
	}
	return sum
}

// add returns s plus o, field by field.
func (s StoreStats) add(o StoreStats) StoreStats {
	return StoreStats{Gets: s.Gets + o.Gets, Puts: s.Puts + o.Puts, Lists: s.Lists + o.Lists, Deletes: s.Deletes + o.Deletes,
		Composes: s.Composes + o.Composes, GetBytes: s.GetBytes + o.GetBytes, PutBytes: s.PutBytes + o.PutBytes,
		CopiedBytes: s.CopiedBytes + o.CopiedBytes}
}

// sub returns s minus o, field by field.
func (s StoreStats) sub(o StoreStats) StoreStats {
	return StoreStats{Gets: s.Gets - o.Gets, Puts: s.Puts - o.Puts, Lists: s.Lists - o.Lists, Deletes: s.Deletes - o.Deletes,
		Composes: s.Composes - o.Composes, GetBytes: s.GetBytes - o.GetBytes, PutBytes: s.PutBytes - o.PutBytes,
		CopiedBytes: s.CopiedBytes - o.CopiedBytes}
}

// StoreRequest is one request a database made of its store, for the
// requests of an open from the store up to its first Get.
type StoreRequest struct {
	// Op is "GET", "PUT", "LIST" or "DELETE"; Object the object's name
	// (a LIST's prefix); Offset and Length a GET's range.
	Op     string `json:"op"`
	Object string `json:"object"`
	Offset int64  `json:"offset,omitempty"`
	Length int64  `json:"length,omitempty"`
	// Start is when it was made, since the trace began; Duration how long
	// until it returned (a GET's body is read after).
	Start    time.Duration `json:"start_ns"`
	Duration time.Duration `json:"duration_ns"`
}

// traceStore is the store the statebackend workload's databases use as
// their Options.SharedStore in shared mode, and open checkpoints from: it
// passes every request on to the instance's slow store, which counts
// them with the uploader's, and counts the database's own apart; while
// a trace runs, it records each request.
type traceStore struct {
	s checkpoint.Store

	gets, puts, lists, deletes, getBytes, putBytes atomic.Int64

	mu      sync.Mutex
	tracing bool
	start   time.Time
	trace   []StoreRequest
}

var _ checkpoint.Store = (*traceStore)(nil)

// stats returns the database's requests so far.
func (t *traceStore) stats() StoreStats {
	return StoreStats{Gets: t.gets.Load(), Puts: t.puts.Load(), Lists: t.lists.Load(), Deletes: t.deletes.Load(),
		GetBytes: t.getBytes.Load(), PutBytes: t.putBytes.Load()}
}

// startTrace begins recording requests.
func (t *traceStore) startTrace() {
	t.mu.Lock()
	t.tracing, t.start, t.trace = true, time.Now(), nil
	t.mu.Unlock()
}

// stopTrace stops recording, and returns the requests recorded, in the
// order they were made.
func (t *traceStore) stopTrace() []StoreRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracing = false
	out := t.trace
	t.trace = nil
	slices.SortFunc(out, func(a, b StoreRequest) int { return cmp.Compare(a.Start, b.Start) })
	return out
}

// record notes a request that began at start, if a trace runs.
func (t *traceStore) record(op, object string, off, length int64, start time.Time) {
	end := time.Now()
	t.mu.Lock()
	if t.tracing && !start.Before(t.start) {
		t.trace = append(t.trace, StoreRequest{Op: op, Object: object, Offset: off, Length: length,
			Start: start.Sub(t.start), Duration: end.Sub(start)})
	}
	t.mu.Unlock()
}

func (t *traceStore) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	start := time.Now()
	t.puts.Add(1)
	err := t.s.Put(ctx, name, r, size)
	if err == nil {
		t.putBytes.Add(size)
	}
	t.record("PUT", name, 0, size, start)
	return err
}

func (t *traceStore) Get(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	start := time.Now()
	t.gets.Add(1)
	rc, err := t.s.Get(ctx, name, off, length)
	t.record("GET", name, off, length, start)
	if err != nil {
		return nil, err
	}
	return &countedBody{ReadCloser: rc, n: &t.getBytes}, nil
}

func (t *traceStore) List(ctx context.Context, prefix string) ([]checkpoint.ObjectInfo, error) {
	start := time.Now()
	t.lists.Add(1)
	out, err := t.s.List(ctx, prefix)
	t.record("LIST", prefix, 0, 0, start)
	return out, err
}

func (t *traceStore) Delete(ctx context.Context, name string) error {
	start := time.Now()
	t.deletes.Add(1)
	err := t.s.Delete(ctx, name)
	t.record("DELETE", name, 0, 0, start)
	return err
}

// countedBody counts the bytes read from a GET's body.
type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
