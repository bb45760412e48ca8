package sstable

import (
	"errors"
	"fmt"

	"github.com/strata-db/strata/index/learned"
)

// Limits on options and entries.
const (
	// MaxBlockSize is the largest allowed WriterOptions.BlockSize.
	MaxBlockSize = 256 << 20
	// MaxEntrySize is the largest key plus value one entry may have.
	MaxEntrySize = 1 << 30
	// maxRestartInterval bounds WriterOptions.BlockRestartInterval.
	maxRestartInterval = 1 << 16
	// maxBitsPerKey bounds WriterOptions.BitsPerKey.
	maxBitsPerKey = 64
)

// WriterOptions configure a Writer. The zero value is valid.
type WriterOptions struct {
	// BlockSize is the target uncompressed size of a data block in bytes: a
	// block is cut once it reaches this size. Default 4096; at most
	// MaxBlockSize.
	BlockSize int
	// BlockRestartInterval is the number of entries between restart points
	// in data blocks. Default 16; at most 65536.
	BlockRestartInterval int
	// BitsPerKey sizes the Bloom filter over user keys, in bits per distinct
	// user key. 0 means DefaultBitsPerKey (10, about 1% false positives); a
	// negative value writes no filter; at most 64.
	BitsPerKey int
	// Compression is the codec for data, index and meta blocks. Default
	// NoCompression. Blocks that it shrinks by less than 12.5% are stored
	// raw.
	Compression Compression
	// Learned, when set, fits a learned index (package learned) over the
	// table's user keys as they are added and stores it, or the reason the
	// key set was refused, in the MetaLearnedName block; the data blocks
	// then carry a checksum of each restart interval, so that lookups can
	// read them in place, and the table is of format version 3. Default
	// nil: no learned index and no block (format version 2).
	Learned *learned.Options
	// PrefixLen, when set, adds the prefix of every user key to the Bloom
	// filter besides the key itself: its first PrefixLen(key) bytes (a
	// negative length: the key has no prefix). PrefixName names the
	// extractor and is recorded in the table's properties
	// (PropPrefixExtractor), so that a reader rules the table out for a
	// prefix (MayContainPrefix) only when asked by the same extractor.
	// Required with PrefixLen. Ignored without a filter (BitsPerKey < 0).
	// Default: none, a filter of whole keys only.
	PrefixName string
	PrefixLen  func(userKey []byte) int
}

// Validate reports every invalid field at once.
func (o WriterOptions) Validate() error {
	var errs []error
	if o.BlockSize < 0 || o.BlockSize > MaxBlockSize {
		errs = append(errs, fmt.Errorf("sstable: BlockSize %d out of range [0, %d]", o.BlockSize, MaxBlockSize))
	}
	if o.BlockRestartInterval < 0 || o.BlockRestartInterval > maxRestartInterval {
		errs = append(errs, fmt.Errorf("sstable: BlockRestartInterval %d out of range [0, %d]", o.BlockRestartInterval, maxRestartInterval))
	}
	if o.PrefixLen != nil && o.PrefixName == "" {
		errs = append(errs, errors.New("sstable: PrefixLen without a PrefixName"))
	}
	if o.BitsPerKey > maxBitsPerKey {
		errs = append(errs, fmt.Errorf("sstable: BitsPerKey %d is above %d", o.BitsPerKey, maxBitsPerKey))
	}
	if o.Compression >= numCompressions {
		errs = append(errs, fmt.Errorf("sstable: unknown Compression %d", o.Compression))
	}
	if o.Learned != nil {
		if err := o.Learned.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// withDefaults fills the zero fields; the one place defaults live.
func (o WriterOptions) withDefaults() WriterOptions {
	if o.BlockSize == 0 {
		o.BlockSize = 4096
	}
	if o.BlockRestartInterval == 0 {
		o.BlockRestartInterval = 16
	}
	if o.BitsPerKey == 0 {
		o.BitsPerKey = DefaultBitsPerKey
	}
	return o
}
