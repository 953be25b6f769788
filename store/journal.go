package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A Journal is the fast front of Append for a long-running writer: each
// record is written to a small file next to the state file (one write(2)
// of one line, no fsync) before Append returns, and a goroutine folds the
// journal into the state file behind it, many records per transaction.
// A call's answer thus waits for a write into the page cache instead of a
// bbolt commit and its two fdatasyncs, and a record written survives the
// writer being killed (SIGKILL): the journal stays on disk and is folded
// in later (ReplayJournals) and read meanwhile by Query. What a journal
// does not survive is the machine losing power before the fold, a few
// milliseconds at most in the normal case.
//
// The file is <state>.journal.<pid>.<random>, mode 0600, and its owner
// holds an exclusive flock on it for its lifetime: a journal nobody holds
// is an orphan that ReplayJournals folds and removes. Every record carries
// a journal id (Record.JID), so a journal replayed after its records were
// already committed adds nothing twice.
type Journal struct {
	st    *Store
	path  string
	f     *os.File
	onErr func(error)

	mu      sync.Mutex
	pending []journalEntry // in the file, not yet committed
	closed  bool

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

type journalEntry struct {
	key time.Time
	val []byte
	jid string
}

// journalInfix separates the state file's name from a journal's suffix.
const journalInfix = ".journal."

// maxJournalBytes bounds what ReplayJournals and Query read of one
// journal file.
const maxJournalBytes = 256 << 20

// foldRetry is how long the folder waits after a failed commit (the state
// file locked by another process for long, say) before trying again.
var foldRetry = 500 * time.Millisecond

// OpenJournal starts a journal in front of s. onErr (nil: ignored) hears
// of folds that failed; the records stay in the journal and are tried
// again.
func (s *Store) OpenJournal(onErr func(error)) (*Journal, error) {
	if s.opts.ReadOnly {
		return nil, s.readOnlyError()
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("store: journal name: %w", err)
	}
	path := s.path + journalInfix + strconv.Itoa(os.Getpid()) + "." + hex.EncodeToString(rnd[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: create journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("store: lock journal %s: %w", path, err)
	}
	if onErr == nil {
		onErr = func(error) {}
	}
	j := &Journal{st: s, path: path, f: f, onErr: onErr,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go j.run()
	return j, nil
}

// Append writes records to the journal and returns; the state file gets
// them shortly after. When the journal cannot be written (or is closed),
// the records are appended to the state file directly, as Store.Append.
func (j *Journal) Append(ctx context.Context, recs ...Record) error {
	if len(recs) == 0 {
		return nil
	}
	recs = slices.Clone(recs)
	for i := range recs {
		if recs[i].JID == "" {
			recs[i].JID = newJID()
		}
	}
	keys, vals, err := j.st.encode(recs)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, v := range vals {
		buf.Write(v)
		buf.WriteByte('\n')
	}
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return j.st.appendEncoded(ctx, keys, vals)
	}
	if _, werr := j.f.Write(buf.Bytes()); werr != nil {
		j.mu.Unlock()
		// A torn line in the file is skipped when it is read; the records
		// go to the state file now.
		return j.st.appendEncoded(ctx, keys, vals)
	}
	for i := range vals {
		j.pending = append(j.pending, journalEntry{key: keys[i], val: vals[i], jid: recs[i].JID})
	}
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	return nil
}

// Close folds what is pending (bounded by ctx) and removes the journal;
// a journal that could not be folded stays on disk for ReplayJournals.
func (j *Journal) Close(ctx context.Context) error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	j.mu.Unlock()
	close(j.stop)
	select {
	case <-j.done:
	case <-ctx.Done():
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.pending) == 0 {
		// Removed while still locked: no reader replays it meanwhile.
		_ = os.Remove(j.path)
	}
	return j.f.Close()
}

// run folds the journal whenever records arrive, until Close.
func (j *Journal) run() {
	defer close(j.done)
	var retry <-chan time.Time
	for {
		select {
		case <-j.wake:
		case <-retry:
		case <-j.stop:
			if err := j.fold(); err != nil {
				j.onErr(err)
			}
			return
		}
		retry = nil
		if err := j.fold(); err != nil {
			j.onErr(err)
			retry = time.After(foldRetry)
		}
	}
}

// fold commits the pending records in one transaction, then drops them
// from the file.
func (j *Journal) fold() error {
	j.mu.Lock()
	batch := slices.Clone(j.pending)
	j.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys := make([]time.Time, len(batch))
	vals := make([][]byte, len(batch))
	for i, e := range batch {
		keys[i], vals[i] = e.key, e.val
	}
	if err := j.st.appendEncoded(ctx, keys, vals); err != nil {
		return fmt.Errorf("store: fold journal: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending = j.pending[len(batch):]
	if len(j.pending) == 0 {
		// Everything in the file is committed: a reader finds each
		// record in the file or, after this, in the state file.
		if err := j.f.Truncate(0); err != nil {
			return fmt.Errorf("store: truncate journal: %w", err)
		}
		return nil
	}
	// Records were written while the batch was committed: the journal is
	// replaced, by a rename, with a file holding only them, so that no
	// reader ever sees a journal without them.
	if err := j.replace(); err != nil {
		return fmt.Errorf("store: rewrite journal: %w", err)
	}
	return nil
}

// replace swaps the journal file for a new one holding only the pending
// records (called with j.mu held): written and locked under a name
// journalPaths does not list, then renamed over the journal.
func (j *Journal) replace() error {
	var rest bytes.Buffer
	for _, e := range j.pending {
		rest.Write(e.val)
		rest.WriteByte('\n')
	}
	dir, base := filepath.Split(j.path)
	tmp := filepath.Join(dir, "."+base+".new")
	_ = os.Remove(tmp) // left by a replace that failed half-way
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(tmp)
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(err)
	}
	if _, err := f.Write(rest.Bytes()); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fail(err)
	}
	old := j.f
	j.f = f
	return old.Close()
}

func newJID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// journalPaths lists the journals of the state file.
func (s *Store) journalPaths() []string {
	dir, base := filepath.Split(s.path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), base+journalInfix) && e.Type().IsRegular() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// readJournal parses a journal's records; a line that does not parse (the
// last one, torn by a kill) is skipped.
func readJournal(f *os.File) ([]Record, [][]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, maxJournalBytes))
	if err != nil {
		return nil, nil, err
	}
	var recs []Record
	var raws [][]byte
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		var r Record
		if json.Unmarshal(line, &r) != nil || r.JID == "" {
			continue
		}
		recs = append(recs, r)
		raws = append(raws, line)
	}
	return recs, raws, nil
}

// openJournalFile opens a journal of s for reading (and, with write, for
// the lock ReplayJournals takes), never through a symbolic link and never
// another user's file.
func openJournalFile(path string, write bool) (*os.File, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkFile(path, fi)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// ReplayJournals folds the journals no running writer holds (left by a
// writer that was killed) into the state file and removes them. Records
// already committed (same JID) are not added again. It returns how many
// records it added.
func (s *Store) ReplayJournals(ctx context.Context) (int, error) {
	if s.opts.ReadOnly {
		return 0, s.readOnlyError()
	}
	added := 0
	var errs []error
	for _, p := range s.journalPaths() {
		n, err := s.replay(ctx, p)
		added += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return added, errors.Join(errs...)
}

func (s *Store) replay(ctx context.Context, path string) (int, error) {
	f, err := openJournalFile(path, true)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, fmt.Errorf("store: journal %s: %w", path, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return 0, nil // its writer runs: it folds its own journal
	}
	recs, raws, err := readJournal(f)
	if err != nil {
		return 0, fmt.Errorf("store: read journal %s: %w", path, err)
	}
	n := 0
	if len(recs) > 0 {
		if n, err = s.appendNew(ctx, recs, raws); err != nil {
			return 0, err
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return n, fmt.Errorf("store: remove journal %s: %w", path, err)
	}
	return n, nil
}

// appendNew commits the journal records whose JID the state file does
// not hold yet, in one transaction.
func (s *Store) appendNew(ctx context.Context, recs []Record, raws [][]byte) (int, error) {
	oldest := recs[0].Time
	for _, r := range recs {
		if r.Time.Before(oldest) {
			oldest = r.Time
		}
	}
	added := 0
	err := s.update(ctx, func(root *bolt.Bucket) error {
		added = 0
		b := root.Bucket(auditBucket)
		have := map[string]bool{}
		c := b.Cursor()
		for k, v := c.Seek(auditKey(oldest, 0)); k != nil; k, v = c.Next() {
			var id struct {
				JID string `json:"jid"`
			}
			if json.Unmarshal(v, &id) == nil && id.JID != "" {
				have[id.JID] = true
			}
		}
		for i, r := range recs {
			if have[r.JID] {
				continue
			}
			seq, err := b.NextSequence()
			if err != nil {
				return fmt.Errorf("store: replay journal: %w", err)
			}
			if err := b.Put(auditKey(r.Time, seq), raws[i]); err != nil {
				return fmt.Errorf("store: replay journal: %w", err)
			}
			have[r.JID] = true
			added++
		}
		return nil
	})
	return added, err
}

// journalRecords reads the records of every journal of s that q matches,
// without locking or changing them (a reader's view of what writers have
// not folded yet).
func (s *Store) journalRecords(q Query) []Record {
	var out []Record
	for _, p := range s.journalPaths() {
		f, err := openJournalFile(p, false)
		if err != nil {
			continue
		}
		recs, _, _ := readJournal(f)
		_ = f.Close()
		for _, r := range recs {
			if (!q.Since.IsZero() && r.Time.Before(q.Since)) || (!q.Until.IsZero() && !r.Time.Before(q.Until)) {
				continue
			}
			if q.match(&r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// withJournals merges the unfolded journal records q matches (extra, read
// before the state file) into the records Query read from the state file
// (a record in both counts once), in time order, keeping the newest
// q.Limit when a limit is set. With q.AfterSeq (following by sequence
// number) only folded records count.
func withJournals(q Query, out, extra []Record) []Record {
	if q.AfterSeq > 0 || len(extra) == 0 {
		return out
	}
	seen := map[string]bool{}
	for _, r := range out {
		if r.JID != "" {
			seen[r.JID] = true
		}
	}
	for _, r := range extra {
		if !seen[r.JID] {
			seen[r.JID] = true
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int { return a.Time.Compare(b.Time) })
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return out
}
