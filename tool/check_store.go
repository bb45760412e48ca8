package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
)

// StoreCheckReport is what check --store found: the audit of the store
// (checkpoint.Audit) and, for each database given, what a read-only open
// of it with the store read.
type StoreCheckReport struct {
	Store     string
	Audit     *checkpoint.AuditReport
	Databases []DatabaseCheck
	// Problems are those of the databases: a manifest that cannot be
	// read, an open or a scan that fails.
	Problems []string
}

// DatabaseCheck is what check --store read of one database.
type DatabaseCheck struct {
	Dir         string
	Instance    string
	SharedFiles int
	// Keys is the number of keys a full scan read (-1: no scan, with
	// --quick).
	Keys int
	// Failed: the open or the scan failed (a problem says why).
	Failed bool
	// Destroying: a Destroy of the database did not finish; it is left
	// out of the audit and not opened (run Destroy again).
	Destroying bool
}

// OK reports whether the check found nothing wrong: no problem, no stray
// marker, no unreferenced object.
func (r *StoreCheckReport) OK() bool {
	return len(r.Problems) == 0 && (r.Audit == nil || r.Audit.OK())
}

// Write prints the report.
func (r *StoreCheckReport) Write(w io.Writer) {
	fmt.Fprintf(w, "check --store %s\n", r.Store)
	if a := r.Audit; a != nil {
		fmt.Fprintf(w, "  registry    %d retained checkpoints %s: %d data objects, %d shared files' objects; %d pieces (%d bytes)\n",
			len(a.Checkpoints), idList(a.Checkpoints), a.DataObjects, a.ExternalObjects, a.Pieces, a.PieceBytes)
		for _, name := range slices.Sorted(maps.Keys(a.Named)) {
			fmt.Fprintf(w, "  registry %s: %d retained checkpoints %s\n", name, len(a.Named[name]), idList(a.Named[name]))
		}
		if a.VerifiedPieces > 0 || a.Pieces == 0 {
			fmt.Fprintf(w, "  verified    %d pieces (%d bytes) against their XXH64\n", a.VerifiedPieces, a.VerifiedBytes)
		} else {
			fmt.Fprintf(w, "  verified    sizes only (--quick)\n")
		}
		fmt.Fprintf(w, "  store       %d objects, %d reference markers, %d holds\n", a.Objects, a.Markers, a.Holds)
	}
	for _, d := range r.Databases {
		keys := "not scanned"
		switch {
		case d.Destroying:
			keys = "being destroyed: not audited (a Destroy did not finish; run it again)"
		case d.Failed:
			keys = "failed (see below)"
		case d.Keys >= 0:
			keys = fmt.Sprintf("%d keys read", d.Keys)
		}
		inst := d.Instance
		if inst == "" {
			inst = "none"
		}
		fmt.Fprintf(w, "  database    %s: instance %s, %d shared files, %s\n", d.Dir, inst, d.SharedFiles, keys)
	}
	problems, strays, unreferenced := len(r.Problems), 0, 0
	if a := r.Audit; a != nil {
		for _, f := range a.Notes {
			fmt.Fprintf(w, "note: %s\n", f)
		}
		for _, f := range a.Fixed {
			fmt.Fprintf(w, "fixed: %s\n", f)
		}
		for _, f := range a.Unreferenced {
			fmt.Fprintf(w, "unreferenced: %s\n", f)
		}
		for _, f := range a.Strays {
			fmt.Fprintf(w, "stray: %s\n", f)
		}
		for _, f := range a.Problems {
			fmt.Fprintf(w, "PROBLEM: %s\n", f)
		}
		problems += len(a.Problems)
		strays, unreferenced = len(a.Strays), len(a.Unreferenced)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "PROBLEM: %s\n", p)
	}
	if r.OK() {
		fmt.Fprintln(w, "OK")
		return
	}
	fmt.Fprintf(w, "%d problems, %d stray markers, %d unreferenced objects\n", problems, strays, unreferenced)
	if unreferenced > 0 {
		fmt.Fprintln(w, "(--fix deletes the unreferenced objects; a stray marker's holder drops it: an instance at its next open, the registry at its next upload)")
	} else if strays > 0 {
		fmt.Fprintln(w, "(a stray marker's holder drops it: an instance at its next open, the registry at its next upload)")
	}
}

func idList(ids []uint64) string {
	if len(ids) == 0 {
		return "(none)"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// runCheckStore is check --store: the store, then the databases.
func (t *Tool) runCheckStore(where string, dirs []string, o StoreCheckOptions) int {
	store, err := t.openStore(where)
	if err != nil {
		return t.fail("check", err)
	}
	r, err := CheckStore(context.Background(), t.FS, store, dirs, t.options(true), o)
	if err != nil {
		return t.fail("check", err)
	}
	r.Store = where
	r.Write(t.Stdout)
	if !r.OK() {
		return 1
	}
	return 0
}

// StoreCheckOptions are check --store's flags.
type StoreCheckOptions struct {
	// Quick checks objects' sizes only, and opens the databases without
	// scanning them (AuditOptions.Quick).
	Quick bool
	// Fix repairs what is safe (AuditOptions.Fix).
	Fix bool
	// All says the databases given are every one that uses the store
	// (AuditOptions.AllInstances).
	All bool
}

// CheckStore audits store (checkpoint.Audit) with the databases in dirs
// on fs: their manifests tell the audit what each instance holds, and
// each is opened read-only with the store and, unless o.Quick, scanned
// in full, which reads every value and so every block and record its
// shared files' checksums cover. opts are the options of those opens
// (nil: defaults; FS, ReadOnly and SharedStore are set, and Merger, if
// not, to the built-in merger the database records). A database whose
// Destroy did not finish is neither audited nor opened. It fails only
// when a store request fails.
func CheckStore(ctx context.Context, fs vfs.FS, store checkpoint.Store, dirs []string, opts *strata.Options, o StoreCheckOptions) (*StoreCheckReport, error) {
	quick := o.Quick
	r := &StoreCheckReport{}
	var instances []*remote.Instance
	for _, dir := range dirs {
		in, err := remote.ReadInstance(fs, dir)
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		if in.Destroying {
			// Its references may be partly gone: it holds nothing the
			// audit may require, and it does not open.
			r.Databases = append(r.Databases, DatabaseCheck{Dir: dir, Instance: in.ID, SharedFiles: len(in.Files), Keys: -1, Destroying: true})
			continue
		}
		instances = append(instances, in)
	}
	audit, err := checkpoint.Audit(ctx, store, &checkpoint.AuditOptions{Quick: quick, Instances: instances, Fix: o.Fix, AllInstances: o.All})
	if err != nil {
		return nil, err
	}
	r.Audit = audit
	for _, in := range instances {
		d := DatabaseCheck{Dir: in.Dir, Instance: in.ID, SharedFiles: len(in.Files), Keys: -1}
		if err := scanWithStore(fs, in.Dir, store, opts, quick, &d); err != nil {
			d.Failed = true
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %v%s", in.Dir, err, mergerHint(err)))
		}
		r.Databases = append(r.Databases, d)
	}
	return r, nil
}

// scanWithStore opens the database in dir read-only with store and,
// unless quick, reads every key and value.
func scanWithStore(fs vfs.FS, dir string, store checkpoint.Store, opts *strata.Options, quick bool, d *DatabaseCheck) error {
	var o strata.Options
	if opts != nil {
		o = *opts
	}
	o.FS, o.ReadOnly, o.SharedStore = fs, true, store
	if o.Merger == nil {
		o.Merger = recordedMerger(fs, dir)
	}
	db, err := strata.Open(dir, &o)
	if err != nil {
		return fmt.Errorf("read-only open with the store: %w", err)
	}
	defer db.Close()
	if quick {
		return nil
	}
	it, err := db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("iterator: %w", err)
	}
	keys := 0
	for ok := it.First(); ok; ok = it.Next() {
		if it.Value() == nil && it.Error() != nil {
			break
		}
		keys++
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("full scan failed after %d keys: %w", keys, err)
	}
	d.Keys = keys
	return nil
}

// The environment an s3:// store is reached with, named as the AWS tools
// name it.
const (
	envS3Endpoint  = "AWS_ENDPOINT_URL_S3" // or AWS_ENDPOINT_URL
	envEndpoint    = "AWS_ENDPOINT_URL"
	envRegion      = "AWS_REGION" // or AWS_DEFAULT_REGION
	envRegionOld   = "AWS_DEFAULT_REGION"
	envAccessKey   = "AWS_ACCESS_KEY_ID"
	envSecretKey   = "AWS_SECRET_ACCESS_KEY"
	defaultRegion  = "us-east-1"
	s3URLScheme    = "s3://"
	s3URLUsageHelp = "s3://BUCKET[/PREFIX], with AWS_ENDPOINT_URL (default: AWS's endpoint of AWS_REGION), AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment"
)

// openStore opens the store where names: a local store's directory, or
// s3://BUCKET[/PREFIX] (see s3Options).
func (t *Tool) openStore(where string) (checkpoint.Store, error) {
	if strings.HasPrefix(where, s3URLScheme) {
		o, err := s3Options(where, os.Getenv)
		if err != nil {
			return nil, err
		}
		return checkpoint.NewS3Store(o)
	}
	// A local store: NewLocalStoreFS would create a missing directory.
	fi, err := t.FS.Stat(where)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no store at %s (a local store's directory, or %s)", where, s3URLUsageHelp)
		}
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (a local store's directory, or %s)", where, s3URLUsageHelp)
	}
	return checkpoint.NewLocalStoreFS(t.FS, where)
}

// s3Options returns the options of the S3 store an s3:// URL names,
// reading the endpoint, region and credentials from the environment
// through getenv.
func s3Options(where string, getenv func(string) string) (checkpoint.S3Options, error) {
	u, err := url.Parse(where)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return checkpoint.S3Options{}, fmt.Errorf("%q is not %s", where, s3URLUsageHelp)
	}
	o := checkpoint.S3Options{
		Bucket:    u.Host,
		Prefix:    strings.Trim(u.Path, "/"),
		Region:    firstSet(getenv, envRegion, envRegionOld),
		AccessKey: getenv(envAccessKey),
		SecretKey: getenv(envSecretKey),
		Endpoint:  firstSet(getenv, envS3Endpoint, envEndpoint),
	}
	if o.Region == "" {
		o.Region = defaultRegion
	}
	if o.Endpoint == "" {
		o.Endpoint = "https://s3." + o.Region + ".amazonaws.com"
	}
	if o.AccessKey == "" || o.SecretKey == "" {
		return checkpoint.S3Options{}, fmt.Errorf("%s: %s and %s must be set", where, envAccessKey, envSecretKey)
	}
	return o, nil
}

func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}
