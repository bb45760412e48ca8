package strata

import (
	"fmt"
	"sync"

	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vlog"
)

// sealer finishes, off the commit path, what a memtable rotation or a
// value-log roll leaves behind: the value log that was active (its footer,
// its sync, its manifest record) and the WAL that was current (its sync
// and close). Each costs tens of milliseconds on a disk with a few hundred
// megabytes of dirty pages, and while the leader did them every writer
// waited: with four writers, rotations were the milliseconds-long tail of
// the commit latency.
//
// Jobs run one at a time, in the order they were submitted, so a value
// log is recorded before the WAL whose records point into it is synced,
// and an older job is done before a newer one.
//
// INVARIANT (what waits for the jobs):
//   - a WAL sync (a Sync write) waits for every job submitted before it: a
//     synced record must never follow records, in an older WAL, that might
//     not survive, nor point into a value log that might not;
//   - a flush of a frozen memtable waits for the jobs submitted up to its
//     freezing (memTable.sealTicket): its pointers must be into value logs
//     the version holds, and its WAL is closed before the flush deletes it;
//   - Close waits for every job.
//
// Recovery copes with what a crash leaves: an older WAL that ends torn
// stops the replay there (see walReplay), and an unrecorded value log is
// adopted (recover_vlog.go).
type sealer struct {
	mu        sync.Mutex
	cond      sync.Cond
	jobs      []sealJob
	running   bool
	submitted uint64
	completed uint64
	err       error // the first job's failure; also the DB's background error
}

// sealJob is one rotation's or roll's leftovers; either field may be nil.
type sealJob struct {
	vlog *vlog.LiveWriter // to finish and record in the manifest
	// vlogDirSynced: vlog's directory entry is durable already.
	vlogDirSynced bool
	wal           *record.Writer // to sync and close, after vlog
}

// submitSeal queues j and returns its ticket: waitSealed(ticket) returns
// once j (and every job before it) has run.
func (d *DB) submitSeal(j sealJob) uint64 {
	s := &d.sealer
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs = append(s.jobs, j)
	s.submitted++
	if !s.running {
		s.running = true
		go d.runSeals()
	}
	return s.submitted
}

// runSeals runs the queued jobs until none is left.
func (d *DB) runSeals() {
	s := &d.sealer
	s.mu.Lock()
	for len(s.jobs) > 0 {
		j := s.jobs[0]
		s.jobs[0] = sealJob{}
		s.jobs = s.jobs[1:]
		s.mu.Unlock()
		err := d.runSeal(j)
		s.mu.Lock()
		if err != nil && s.err == nil {
			s.err = err
		}
		s.completed++
		s.cond.Broadcast()
	}
	s.jobs = nil
	s.running = false
	s.mu.Unlock()
}

// runSeal runs one job. A failure becomes the background error: the WAL
// or value log may now end in a partial record, so nothing more is
// written.
func (d *DB) runSeal(j sealJob) error {
	if j.vlog != nil {
		if err := d.finishValueLog(j.vlog, j.vlogDirSynced); err != nil {
			return err
		}
	}
	if j.wal != nil {
		if err := j.wal.Close(); err != nil {
			err = fmt.Errorf("strata: close WAL: %w", err)
			d.reportBackgroundError(err)
			return err
		}
	}
	return nil
}

// waitSealed waits until the jobs up to ticket t have run, and returns the
// first failure of any job.
func (d *DB) waitSealed(t uint64) error {
	s := &d.sealer
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.completed < t {
		s.cond.Wait()
	}
	return s.err
}

// waitAllSealed waits for every job submitted so far, and returns the
// first failure of any job.
func (d *DB) waitAllSealed() error {
	s := &d.sealer
	s.mu.Lock()
	t := s.submitted
	s.mu.Unlock()
	return d.waitSealed(t)
}

// finishValueLog finishes a value log written at commit and records it in
// the manifest, after syncing the directory unless dirSynced says its entry
// is durable already.
func (d *DB) finishValueLog(a *vlog.LiveWriter, dirSynced bool) error {
	meta, err := a.Finish()
	if err != nil {
		err = fmt.Errorf("strata: finish value log: %w", err)
		d.reportBackgroundError(err)
		return err
	}
	if !dirSynced {
		if err := syncDirErr(d); err != nil {
			d.reportBackgroundError(err)
			return err
		}
	}
	d.mu.Lock()
	err = d.vs.LogAndApply(&manifest.VersionEdit{NewVlogs: []*manifest.VlogMetadata{meta}})
	if err == nil {
		d.updateReadStateLocked()
		d.scheduleGCLocked()
	}
	d.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("strata: record value log: %w", err)
		d.reportBackgroundError(err)
	}
	return err
}
