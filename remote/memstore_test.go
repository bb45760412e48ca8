package remote

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// memStore is a Store in memory that counts requests; fail, if set, can
// fail a request before it runs.
type memStore struct {
	mu      sync.Mutex
	objects map[string][]byte
	gets    int
	puts    int
	fail    func(op, name string) error
}

func newMemStore() *memStore { return &memStore{objects: map[string][]byte{}} }

// failOp makes every request op ("get", "put", "delete", ...) fail with
// err, until fail is set to nil.
func (s *memStore) failOp(op string, err error) {
	s.fail = func(o, name string) error {
		if o == op {
			return err
		}
		return nil
	}
}

func (s *memStore) check(op, name string) error {
	if s.fail != nil {
		return s.fail(op, name)
	}
	return nil
}

func (s *memStore) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if err := s.check("put", name); err != nil {
		return err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if int64(len(b)) != size {
		return fmt.Errorf("put %s: %d bytes, want %d", name, len(b), size)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[name] = b
	s.puts++
	return nil
}

func (s *memStore) Get(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := s.check("get", name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objects[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotExist, name)
	}
	if length < 0 {
		length = int64(len(b)) - off
	}
	if off < 0 || off+length > int64(len(b)) {
		return nil, fmt.Errorf("get %s: range [%d, %d) past %d bytes", name, off, off+length, len(b))
	}
	s.gets++
	return io.NopCloser(bytes.NewReader(b[off : off+length])), nil
}

func (s *memStore) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := s.check("list", prefix); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ObjectInfo
	for name, b := range s.objects {
		if strings.HasPrefix(name, prefix) {
			out = append(out, ObjectInfo{Name: name, Size: int64(len(b))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *memStore) Delete(ctx context.Context, name string) error {
	if err := s.check("delete", name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, name)
	return nil
}

func (s *memStore) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.objects[name]
	return ok
}

func (s *memStore) getCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets
}
