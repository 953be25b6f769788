package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{LockTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustQuery(t testing.TB, s *Store, q Query) []Record {
	t.Helper()
	recs, err := s.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func tools(recs []Record) string {
	var names []string
	for _, r := range recs {
		names = append(names, r.Tool)
	}
	return strings.Join(names, ",")
}

func TestOpenCreatesPrivateFileAndDirs(t *testing.T) {
	base := t.TempDir()
	path := filepath.Join(base, "a", "b", "state.db")
	if _, err := Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b")} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o700 {
			t.Errorf("%s: mode %o, want 700", dir, got)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("state file mode %o, want 600", got)
	}

	// An existing file open to others is restricted.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("reopened file mode %o, want 600", fi.Mode().Perm())
	}
}

func TestOpenRejectsDirectoryAndEmptyPath(t *testing.T) {
	if _, err := Open("", Options{}); err == nil {
		t.Error("empty path accepted")
	}
	dir := t.TempDir()
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("directory: err = %v", err)
	}
}

func TestDefaultPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	if got, _ := DefaultPath(); got != "/xdg/state/fleetmux/state.db" {
		t.Errorf("with XDG_STATE_HOME: %s", got)
	}
	for _, v := range []string{"", "relative/dir"} {
		t.Setenv("XDG_STATE_HOME", v)
		want := filepath.Join(home, ".local", "state", "fleetmux", "state.db")
		if got, _ := DefaultPath(); got != want {
			t.Errorf("XDG_STATE_HOME=%q: %s, want %s", v, got, want)
		}
	}
}

func TestAppendQueryOrderAndFilters(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }
	// Appended out of time order, in two calls.
	if err := s.Append(ctx,
		Record{Time: at(30), Host: "local", Tool: "t30", Outcome: OutcomeOK, SessionID: "p1", MCPSessionID: "H1"},
		Record{Time: at(10), Host: "devbox-3", Tool: "t10", Outcome: OutcomeError, Error: "boom", SessionID: "p1", MCPSessionID: "H2"},
		Record{Time: at(20).In(time.FixedZone("X", 3600)), Host: "local", Tool: "t20", Outcome: OutcomeRefused},
	); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx,
		Record{Time: at(40), Host: "devbox-3", Tool: "t40", Outcome: OutcomeOK, SessionID: "p2"},
		Record{Time: at(20), Host: "devbox-3", Tool: "t20b", Outcome: OutcomeOK},
	); err != nil {
		t.Fatal(err)
	}

	all := mustQuery(t, s, Query{})
	if got := tools(all); got != "t10,t20,t20b,t30,t40" {
		t.Fatalf("time order: %s", got)
	}
	seen := map[uint64]bool{}
	for _, r := range all {
		if r.Seq == 0 || seen[r.Seq] {
			t.Errorf("bad or repeated seq %d", r.Seq)
		}
		seen[r.Seq] = true
		if r.Time.Location() != time.UTC {
			t.Errorf("%s: time not UTC: %v", r.Tool, r.Time)
		}
	}
	if all[1].Time != at(20) {
		t.Errorf("time not preserved: %v", all[1].Time)
	}
	if all[0].Error != "boom" || all[0].Outcome != OutcomeError || all[0].Host != "devbox-3" || all[0].MCPSessionID != "H2" {
		t.Errorf("fields not preserved: %+v", all[0])
	}

	for _, tt := range []struct {
		name string
		q    Query
		want string
	}{
		{"host", Query{Host: "devbox-3"}, "t10,t20b,t40"},
		{"tool", Query{Tool: "t30"}, "t30"},
		{"outcome", Query{Outcome: OutcomeRefused}, "t20"},
		{"host and outcome", Query{Host: "devbox-3", Outcome: OutcomeOK}, "t20b,t40"},
		{"since inclusive", Query{Since: at(20)}, "t20,t20b,t30,t40"},
		{"until exclusive", Query{Until: at(30)}, "t10,t20,t20b"},
		{"window", Query{Since: at(15), Until: at(35)}, "t20,t20b,t30"},
		{"limit keeps newest", Query{Limit: 2}, "t30,t40"},
		{"limit with until", Query{Until: at(30), Limit: 2}, "t20,t20b"},
		{"limit with filter", Query{Host: "local", Limit: 1}, "t30"},
		{"limit larger than matches", Query{Host: "local", Limit: 10}, "t20,t30"},
		{"limit with since", Query{Since: at(25), Limit: 10}, "t30,t40"},
		{"until before everything", Query{Until: at(5), Limit: 3}, ""},
		{"until after everything", Query{Until: at(100), Limit: 1}, "t40"},
		{"after seq", Query{AfterSeq: 3}, "t20b,t40"},
		{"no match", Query{Host: "nope"}, ""},
		{"process session", Query{Session: "p1"}, "t10,t30"},
		{"http session", Query{Session: "H2"}, "t10"},
		{"http session and host", Query{Session: "H1", Host: "devbox-3"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tools(mustQuery(t, s, tt.q)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := s.Query(ctx, Query{Limit: -1}); err == nil {
		t.Error("negative limit accepted")
	}
	if seq, err := s.LastSeq(ctx); err != nil || seq != 5 {
		t.Errorf("LastSeq = %d, %v", seq, err)
	}
}

func TestAppendNormalizes(t *testing.T) {
	s := openTemp(t)
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	s.now = func() time.Time { return fixed }
	long := strings.Repeat("é", MaxErrorBytes) // 2 bytes per rune
	big := `{"filters":"` + strings.Repeat("x", MaxArgsBytes) + `"}`
	if err := s.Append(context.Background(),
		Record{Tool: "a", Seq: 99, Error: long, Args: json.RawMessage(`{"keys":"secret`)},
		Record{Tool: "b", Args: json.RawMessage(big), Host: strings.Repeat("h", 1000)},
	); err != nil {
		t.Fatal(err)
	}
	recs := mustQuery(t, s, Query{})
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	a, b := recs[0], recs[1]
	if !a.Time.Equal(fixed) || a.Seq != 1 {
		t.Errorf("time %v seq %d", a.Time, a.Seq)
	}
	if len(a.Error) > MaxErrorBytes || !utf8.ValidString(a.Error) || !strings.HasSuffix(a.Error, truncationSuffix) {
		t.Errorf("error not bounded: %d bytes", len(a.Error))
	}
	if bytes.Contains(a.Args, []byte("secret")) || !bytes.Contains(a.Args, []byte("invalid_json")) {
		t.Errorf("invalid args stored as %s", a.Args)
	}
	if len(b.Host) != MaxNameBytes {
		t.Errorf("host not bounded: %d bytes", len(b.Host))
	}
	if !bytes.Contains(b.Args, []byte("args_too_large")) {
		t.Errorf("oversized args stored whole (%d bytes)", len(b.Args))
	}
	if err := s.Append(context.Background()); err != nil {
		t.Errorf("empty append: %v", err)
	}
}

func TestLockedFileTimesOut(t *testing.T) {
	s := openTemp(t)
	holder, err := bolt.Open(s.Path(), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	s.opts.LockTimeout = 300 * time.Millisecond
	for name, op := range map[string]func() error{
		"append": func() error { return s.Append(context.Background(), Record{Tool: "x"}) },
		"query":  func() error { _, err := s.Query(context.Background(), Query{}); return err },
		"hosts":  func() error { _, err := s.HostStates(context.Background()); return err },
	} {
		start := time.Now()
		err := op()
		elapsed := time.Since(start)
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), s.Path()) {
			t.Errorf("%s: err = %v, want ErrLocked naming the path", name, err)
		}
		if elapsed > 2*time.Second {
			t.Errorf("%s: waited %s for a 300ms lock timeout", name, elapsed)
		}
	}
	// A context deadline shorter than LockTimeout wins.
	s.opts.LockTimeout = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Append(ctx, Record{Tool: "x"}); !errors.Is(err, ErrLocked) || time.Since(start) > 2*time.Second {
		t.Errorf("ctx deadline: err = %v after %s", err, time.Since(start))
	}
	holder.Close()
	if err := s.Append(context.Background(), Record{Tool: "after"}); err != nil {
		t.Errorf("after release: %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	s := openTemp(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Append(ctx, Record{Tool: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Append: %v", err)
	}
	if _, err := s.Query(ctx, Query{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Query: %v", err)
	}
	if _, err := OpenContext(ctx, s.Path(), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Open: %v", err)
	}
}

// Goroutines of one process, through one Store or several on the same path,
// take turns without hitting the lock timeout.
func TestConcurrentGoroutines(t *testing.T) {
	s := openTemp(t)
	s2, err := Open(s.Path(), Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		st := s
		if g%2 == 1 {
			st = s2
		}
		wg.Go(func() {
			for i := range 20 {
				if err := st.Append(context.Background(), Record{Host: fmt.Sprint("g", g), Tool: fmt.Sprint(i)}); err != nil {
					errs <- err
					return
				}
				if i%5 == 0 {
					if _, err := st.Query(context.Background(), Query{Limit: 10}); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(mustQuery(t, s, Query{})); n != 160 {
		t.Errorf("%d records, want 160", n)
	}
}

func TestCorruptFile(t *testing.T) {
	valid := openTemp(t)
	if err := valid.Append(context.Background(), Record{Tool: "x"}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(valid.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"text", []byte("this is not a database\n")},
		{"zeros", make([]byte, 32<<10)},
		{"truncated", good[:8192]},
		{"smashed pages", append(append([]byte{}, good[:8192]...), bytes.Repeat([]byte{0xff}, len(good)-8192)...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			fdsBefore := openFDs()
			_, err := Open(path, Options{LockTimeout: time.Second})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want ErrCorrupt naming %s", err, path)
			}
			if fdsBefore >= 0 && openFDs() > fdsBefore {
				t.Errorf("file descriptor leaked: %d -> %d", fdsBefore, openFDs())
			}
		})
	}
}

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func TestForeignAndNewerFiles(t *testing.T) {
	dir := t.TempDir()
	rawDB := func(name string, fn func(tx *bolt.Tx) error) string {
		path := filepath.Join(dir, name)
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(fn); err != nil {
			t.Fatal(err)
		}
		return path
	}

	foreign := rawDB("foreign.db", func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("widgets"))
		return err
	})
	if _, err := Open(foreign, Options{}); !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), foreign) {
		t.Errorf("foreign: %v", err)
	}

	noBuckets := rawDB("empty.db", func(*bolt.Tx) error { return nil })
	if s, err := Open(noBuckets, Options{}); err != nil {
		t.Errorf("bbolt file without buckets: %v", err)
	} else if err := s.Append(context.Background(), Record{Tool: "x"}); err != nil {
		t.Error(err)
	}

	zero := filepath.Join(dir, "zero.db")
	if err := os.WriteFile(zero, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(zero, Options{}); err != nil {
		t.Errorf("zero-length file: %v", err)
	}

	s := openTemp(t)
	setVersion := func(v string) {
		db, err := bolt.Open(s.Path(), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(rootBucket).Bucket(metaBucket).Put(keyVersion, []byte(v))
		}); err != nil {
			t.Fatal(err)
		}
	}
	setVersion(fmt.Sprint(schemaVersion + 1))
	if err := s.Append(context.Background(), Record{Tool: "x"}); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("Append on newer schema: %v", err)
	}
	if _, err := Open(s.Path(), Options{}); !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), s.Path()) {
		t.Errorf("Open on newer schema: %v", err)
	}
	setVersion("two")
	if _, err := s.Query(context.Background(), Query{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad version: %v", err)
	}
}

// A state file deleted while fleetmux runs is recreated by the next write.
func TestDeletedFileIsRecreated(t *testing.T) {
	s := openTemp(t)
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Query(context.Background(), Query{}); err == nil {
		t.Error("query of a missing file succeeded")
	}
	if err := s.Append(context.Background(), Record{Tool: "again"}); err != nil {
		t.Fatal(err)
	}
	if got := tools(mustQuery(t, s, Query{})); got != "again" {
		t.Errorf("got %q", got)
	}
}

func TestHostStates(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if m, err := s.HostStates(ctx); err != nil || len(m) != 0 {
		t.Fatalf("empty: %v %v", m, err)
	}
	t1 := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	steps := []HostState{
		{Host: "devbox-3", LastConnect: t1, TmuxVersion: "3.3a", RTT: 12 * time.Millisecond, State: "connected"},
		{Host: "devbox-3", LastError: "dial tcp: i/o timeout", LastErrorTime: t2, State: "unreachable"},
		{Host: "devbox-7", TmuxVersion: "3.4"},
		{Host: "devbox-3", RTT: 9 * time.Millisecond},
	}
	for _, st := range steps {
		if err := s.PutHostState(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	m, err := s.HostStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := HostState{Host: "devbox-3", LastConnect: t1, TmuxVersion: "3.3a", LastError: "dial tcp: i/o timeout",
		LastErrorTime: t2, RTT: 9 * time.Millisecond, State: "unreachable"}
	if got := m["devbox-3"]; got != want {
		t.Errorf("devbox-3:\n got %+v\nwant %+v", got, want)
	}
	if got := m["devbox-7"]; got != (HostState{Host: "devbox-7", TmuxVersion: "3.4"}) {
		t.Errorf("devbox-7: %+v", got)
	}
	if len(m) != 2 {
		t.Errorf("%d hosts", len(m))
	}
	if err := s.PutHostState(ctx, HostState{TmuxVersion: "x"}); err == nil {
		t.Error("host state without host accepted")
	}
}

func TestPruneByAgeAndSize(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	now := time.Now()
	var recs []Record
	for i := range 2500 { // more than one prune batch
		recs = append(recs, Record{Time: now.Add(-100 * 24 * time.Hour).Add(time.Duration(i)), Tool: "old"})
	}
	recs = append(recs,
		Record{Time: now.Add(-10 * 24 * time.Hour), Tool: "recent"},
		Record{Time: now, Tool: "new"},
	)
	if err := s.Append(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	n, err := s.Prune(ctx, 90*24*time.Hour, 0)
	if err != nil || n != 2500 {
		t.Fatalf("age prune: %d, %v", n, err)
	}
	if got := tools(mustQuery(t, s, Query{})); got != "recent,new" {
		t.Errorf("after age prune: %s", got)
	}

	pad := strings.Repeat("p", 900)
	for i := range 50 {
		args, _ := json.Marshal(map[string]string{"x": pad})
		if err := s.Append(ctx, Record{Time: now.Add(time.Duration(i+1) * time.Second), Tool: fmt.Sprint("s", i), Args: args}); err != nil {
			t.Fatal(err)
		}
	}
	n, err = s.Prune(ctx, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	total, err := s.auditBytes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	left := mustQuery(t, s, Query{})
	if total > 10_000 || n+len(left) != 52 || len(left) < 5 {
		t.Errorf("size prune: deleted %d, %d left, %d bytes", n, len(left), total)
	}
	if left[len(left)-1].Tool != "s49" {
		t.Errorf("newest record pruned: %s", tools(left))
	}
	if n, err := s.Prune(ctx, 0, 0); err != nil || n != 0 {
		t.Errorf("no-op prune: %d %v", n, err)
	}
}

func TestCompact(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	var recs []Record
	for i := range 3000 {
		recs = append(recs, Record{Time: time.Now().Add(time.Duration(i)), Tool: fmt.Sprint("t", i), Args: json.RawMessage(`{"pane_id":"%1"}`)})
	}
	if err := s.Append(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	if err := s.PutHostState(ctx, HostState{Host: "h", TmuxVersion: "3.3a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(ctx, 0, 2000); err != nil {
		t.Fatal(err)
	}
	before := mustQuery(t, s, Query{})
	fi1, _ := os.Stat(s.Path())
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	fi2, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi2.Size() >= fi1.Size() {
		t.Errorf("size %d -> %d", fi1.Size(), fi2.Size())
	}
	if fi2.Mode().Perm() != 0o600 {
		t.Errorf("compacted mode %o", fi2.Mode().Perm())
	}
	after := mustQuery(t, s, Query{})
	if tools(after) != tools(before) || len(after) == 0 {
		t.Errorf("records changed by compaction: %d -> %d", len(before), len(after))
	}
	if m, _ := s.HostStates(ctx); m["h"].TmuxVersion != "3.3a" {
		t.Errorf("host state lost: %+v", m)
	}
	if err := s.Append(ctx, Record{Tool: "next"}); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, s, Query{Limit: 1}); got[0].Seq != 3001 {
		t.Errorf("sequence not carried over: %d", got[0].Seq)
	}
	if _, err := os.Stat(s.Path() + ".compact"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}

// A process that opened the old file before Compact renamed the copy over it
// must not write into the unlinked file: it reopens the path.
func TestCompactRetiresOldFile(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if err := s.Append(ctx, Record{Tool: "first"}); err != nil {
		t.Fatal(err)
	}
	// A second Store through a symlinked directory has its own in-process
	// semaphore, as another process would.
	linkDir := filepath.Join(t.TempDir(), "linkdir")
	if err := os.Symlink(filepath.Dir(s.Path()), linkDir); err != nil {
		t.Fatal(err)
	}
	other, err := Open(filepath.Join(linkDir, filepath.Base(s.Path())), Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	oldInode := filepath.Join(filepath.Dir(s.Path()), "old-inode.db")
	if err := os.Link(s.Path(), oldInode); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	testHookCompactLocked = func() {
		go func() { done <- other.Append(ctx, Record{Tool: "during"}) }()
		time.Sleep(150 * time.Millisecond) // let it open the old file and wait for the lock
	}
	defer func() { testHookCompactLocked = nil }()
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := tools(mustQuery(t, s, Query{})); got != "first,during" {
		t.Errorf("after compaction: %q", got)
	}
	// The old inode is marked, so nothing more is written to it.
	old, err := Open(oldInode, Options{LockTimeout: 500 * time.Millisecond})
	if err == nil {
		err = old.Append(ctx, Record{Tool: "lost"})
	}
	if err == nil || !strings.Contains(err.Error(), "compact") {
		t.Errorf("write to the retired file: %v", err)
	}
}
