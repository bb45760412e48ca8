package checkpoint

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// PartialUpload is an upload a store began and neither finished nor
// abandoned: on S3, a multipart upload (Compose) whose client stopped (a
// crash) between its creation and its completion. Its parts are kept,
// invisible to List and paid for, until it is aborted.
type PartialUpload struct {
	Name      string // the object it would have written
	ID        string
	Initiated time.Time
}

// PartialUploads is implemented by a Store whose writes can leave partial
// uploads behind (S3Store). Audit lists them, and its Fix aborts those
// old enough not to be in flight.
type PartialUploads interface {
	Store
	// ListPartialUploads returns the partial uploads of objects whose
	// names have prefix, by name.
	ListPartialUploads(ctx context.Context, prefix string) ([]PartialUpload, error)
	// AbortPartialUpload aborts u: its parts are deleted, no object is
	// written. An upload already gone is not an error.
	AbortPartialUpload(ctx context.Context, u PartialUpload) error
}

// ListPartialUploads implements PartialUploads: the bucket's multipart
// uploads under the store's prefix.
func (s *S3Store) ListPartialUploads(ctx context.Context, prefix string) ([]PartialUpload, error) {
	var out []PartialUpload
	strip := s.key("")
	keyMarker, idMarker := "", ""
	for {
		q := url.Values{"uploads": {""}, "prefix": {s.key(prefix)}}
		if keyMarker != "" {
			q.Set("key-marker", keyMarker)
			q.Set("upload-id-marker", idMarker)
		}
		var res struct {
			XMLName xml.Name `xml:"ListMultipartUploadsResult"`
			Upload  []struct {
				Key       string
				UploadId  string
				Initiated string
			}
			IsTruncated        bool
			NextKeyMarker      string
			NextUploadIdMarker string
		}
		err := s.call(ctx, &s3Request{method: http.MethodGet, query: q}, func(resp *http.Response) error {
			res.Upload = res.Upload[:0]
			if err := xml.NewDecoder(resp.Body).Decode(&res); err != nil {
				return fmt.Errorf("decode the answer: %w", err)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("checkpoint: list the partial uploads of %q: %w", prefix, err)
		}
		for _, u := range res.Upload {
			name, ok := strings.CutPrefix(u.Key, strip)
			if !ok || ValidName(name) != nil {
				continue
			}
			at, err := time.Parse(time.RFC3339, u.Initiated)
			if err != nil {
				return nil, fmt.Errorf("checkpoint: list the partial uploads of %q: upload %s of %s began at %q: %w", prefix, u.UploadId, name, u.Initiated, err)
			}
			out = append(out, PartialUpload{Name: name, ID: u.UploadId, Initiated: at})
		}
		if !res.IsTruncated {
			break
		}
		if res.NextKeyMarker == "" {
			return nil, fmt.Errorf("checkpoint: list the partial uploads of %q: the answer is truncated but gives no next marker", prefix)
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIdMarker
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// AbortPartialUpload implements PartialUploads.
func (s *S3Store) AbortPartialUpload(ctx context.Context, u PartialUpload) error {
	if err := ValidName(u.Name); err != nil {
		return err
	}
	err := s.call(ctx, &s3Request{method: http.MethodDelete, key: s.key(u.Name), query: url.Values{"uploadId": {u.ID}}}, nil)
	if err != nil {
		var se *S3Error
		if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Code == "NoSuchUpload") {
			return nil
		}
		return fmt.Errorf("checkpoint: abort upload %s of %s: %w", u.ID, u.Name, err)
	}
	return nil
}

var _ PartialUploads = (*S3Store)(nil)
