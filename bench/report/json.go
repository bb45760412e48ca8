package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/strata-db/strata/bench"
)

// WriteJSON writes r as indented JSON. Numbers JSON cannot carry (NaN and
// infinities) are written as 0; r itself is not changed.
func WriteJSON(w io.Writer, r *bench.Report) error {
	if r == nil {
		return errNilReport
	}
	out := *r
	out.Results = make([]bench.Result, len(r.Results))
	for i, res := range r.Results {
		res.OpsPerSec = finite(res.OpsPerSec)
		res.RowsPerSec = finite(res.RowsPerSec)
		res.MBPerSec = finite(res.MBPerSec)
		res.WriteAmp = finite(res.WriteAmp)
		res.SpaceAmp = finite(res.SpaceAmp)
		if len(res.Timeline) > 0 {
			tl := make([]bench.Sample, len(res.Timeline))
			for j, s := range res.Timeline {
				s.OpsPerSec = finite(s.OpsPerSec)
				tl[j] = s
			}
			res.Timeline = tl
		}
		out.Results[i] = res
	}
	out.Spec.ZipfTheta = finite(out.Spec.ZipfTheta)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return fmt.Errorf("report: writing JSON: %w", err)
	}
	return nil
}
