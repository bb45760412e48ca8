// Package base is the shared vocabulary of the engine: internal keys
// (user key + sequence number + kind), the key comparison, file numbers and
// file names, the internal iterator interface, and the error markers that
// every layer wraps (ErrCorruption, ErrNotFound, ErrClosed).
//
// It imports nothing from the rest of the module and owns no I/O.
package base
