package vlog

import (
	"fmt"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// SeparatorOptions configure a Separator.
type SeparatorOptions struct {
	FS  vfs.FS
	Dir string
	// NewFileNum allocates the number of each value log started.
	NewFileNum func() base.FileNum
	// Policy decides which values Separate moves out. nil separates none
	// (Add still appends).
	Policy Policy
	// FileSize is the size in bytes past which the next value starts a new
	// value log. 0: no limit.
	FileSize int64
}

// Separator writes the values that leave the tree during one flush or
// compaction into new value logs: it starts one at the first value and
// another whenever the current one passes FileSize. Finish makes them
// durable and describes them for the manifest; Abort removes them. Not safe
// for concurrent use.
type Separator struct {
	o    SeparatorOptions
	w    *Writer
	done []*manifest.VlogMetadata // finished value logs
	nums []base.FileNum           // every value log started, for Abort
}

// NewSeparator returns a Separator that has written nothing yet.
func NewSeparator(o SeparatorOptions) *Separator { return &Separator{o: o} }

// Separate appends value if the policy moves it out of the tree and returns
// its pointer; ok is false when the value stays inline.
func (s *Separator) Separate(key, value []byte) (p Pointer, ok bool, err error) {
	if s.o.Policy == nil || !s.o.Policy.Separate(key, len(value)) {
		return Pointer{}, false, nil
	}
	p, err = s.Add(key, value)
	return p, err == nil, err
}

// Add appends key and value to the current value log, starting one if
// needed, and returns the record's pointer. The pointer is durable only
// once Finish returns.
func (s *Separator) Add(key, value []byte) (Pointer, error) {
	if s.w != nil && s.o.FileSize > 0 && int64(s.w.Size()) >= s.o.FileSize {
		if err := s.finishCurrent(); err != nil {
			return Pointer{}, err
		}
	}
	if s.w == nil {
		num := s.o.NewFileNum()
		s.nums = append(s.nums, num)
		f, err := s.o.FS.Create(s.o.FS.PathJoin(s.o.Dir, base.MakeFilename(base.FileTypeVlog, num)))
		if err != nil {
			return Pointer{}, fmt.Errorf("strata: create value log: %w", err)
		}
		s.w = NewWriter(f, num)
	}
	return s.w.Add(key, value)
}

// finishCurrent completes and syncs the current value log.
func (s *Separator) finishCurrent() error {
	if s.w == nil {
		return nil
	}
	w := s.w
	s.w = nil
	if err := w.Finish(); err != nil {
		return fmt.Errorf("strata: finish value log: %w", err)
	}
	// After Finish, Size counts the whole file, footer included.
	s.done = append(s.done, &manifest.VlogMetadata{FileNum: w.FileNum(), Size: w.Size(), Records: w.Count(), ValueBytes: w.ValueBytes()})
	return nil
}

// Finish completes and syncs the value log being written and returns every
// value log this Separator wrote, for the manifest edit that will reference
// them. The caller must sync the directory before that edit.
func (s *Separator) Finish() ([]*manifest.VlogMetadata, error) {
	if err := s.finishCurrent(); err != nil {
		return nil, err
	}
	return s.done, nil
}

// Written reports whether any value log was started.
func (s *Separator) Written() bool { return len(s.nums) > 0 }

// Abort discards every value log this Separator started.
func (s *Separator) Abort() {
	if s.w != nil {
		s.w.Abort()
		s.w = nil
	}
	for _, num := range s.nums {
		// Best effort: a leftover file is removed at the next Open.
		_ = s.o.FS.Remove(s.o.FS.PathJoin(s.o.Dir, base.MakeFilename(base.FileTypeVlog, num)))
	}
	s.nums, s.done = nil, nil
}
