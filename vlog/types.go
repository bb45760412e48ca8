package vlog

import "github.com/strata-db/strata/internal/base"

// FileNum is a value log's number: the name a public caller (an operator's
// tool) uses for the type NewReader and Pointer take from internal/base.
type FileNum = base.FileNum
