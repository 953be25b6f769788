package store

// Regression tests from a review of the audit reader and start-up paths:
// Options.ReadOnly, Handle, and the message for files bbolt cannot read.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestReadOnlyNeverWrites(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	if err := s.Append(ctx, Record{Host: "local", Tool: "list_sessions", Outcome: OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutHostState(ctx, HostState{Host: "dev-1", TmuxVersion: "3.3a"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.Path(), 0o640); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(s.Path())

	ro, err := OpenContext(ctx, s.Path(), Options{ReadOnly: true, LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if recs := mustQuery(t, ro, Query{}); len(recs) != 1 || recs[0].Tool != "list_sessions" {
		t.Errorf("query: %+v", recs)
	}
	if hs, err := ro.HostStates(ctx); err != nil || hs["dev-1"].TmuxVersion != "3.3a" {
		t.Errorf("host states: %v %v", hs, err)
	}
	if seq, err := ro.LastSeq(ctx); err != nil || seq != 1 {
		t.Errorf("last seq %d %v", seq, err)
	}
	for name, op := range map[string]func() error{
		"append":  func() error { return ro.Append(ctx, Record{Tool: "x"}) },
		"host":    func() error { return ro.PutHostState(ctx, HostState{Host: "h", State: "idle"}) },
		"prune":   func() error { _, err := ro.Prune(ctx, time.Nanosecond, 1); return err },
		"compact": func() error { return ro.Compact(ctx) },
	} {
		if err := op(); !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), s.Path()) {
			t.Errorf("%s on a read-only store: %v", name, err)
		}
	}
	after, _ := os.ReadFile(s.Path())
	if !bytes.Equal(before, after) {
		t.Error("a read-only store changed the file")
	}
	if fi, _ := os.Stat(s.Path()); fi.Mode().Perm() != 0o640 {
		t.Errorf("a read-only open changed the mode to %o", fi.Mode().Perm())
	}
}

// A read-only store shares the file with readers: it needs only a shared
// lock, so another reader holding one does not make it wait.
func TestReadOnlySharesWithReaders(t *testing.T) {
	s := openTemp(t)
	reader, err := bolt.Open(s.Path(), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	start := time.Now()
	ro, err := OpenContext(context.Background(), s.Path(), Options{ReadOnly: true, LockTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Query(context.Background(), Query{}); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 250*time.Millisecond {
		t.Errorf("read-only store waited %s behind another reader", time.Since(start))
	}
}

func TestReadOnlyFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	missing := filepath.Join(dir, "sub", "state.db")
	if _, err := OpenContext(ctx, missing, Options{ReadOnly: true}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Error("a read-only open created the directory")
	}

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenContext(ctx, empty, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("empty file: %v", err)
	}
	if recs := mustQuery(t, ro, Query{}); len(recs) != 0 {
		t.Errorf("empty file: %v", recs)
	}
	if fi, _ := os.Stat(empty); fi.Size() != 0 {
		t.Errorf("empty file grew to %d bytes", fi.Size())
	}

	if _, err := OpenContext(ctx, dir, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: %v", err)
	}

	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte("not a database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenContext(ctx, garbage, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), garbage) {
		t.Errorf("garbage: %v", err)
	}

	v1, err := os.ReadFile(v1Fixture)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "v1.db")
	if err := os.WriteFile(old, v1, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenContext(ctx, old, Options{ReadOnly: true}); !errors.Is(err, ErrOldSchema) || !strings.Contains(err.Error(), old) {
		t.Errorf("v1 file read-only: %v", err)
	}
	if got, _ := os.ReadFile(old); !bytes.Equal(got, v1) {
		t.Error("a read-only open migrated the file")
	}
	// A normal open migrates it; then read-only works.
	if _, err := Open(old, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenContext(ctx, old, Options{ReadOnly: true}); err != nil {
		t.Errorf("after migration: %v", err)
	}
}

// Reads of a file truncated to zero while a store uses it see no records
// instead of failing on bbolt's attempt to initialise it.
func TestQueryOfTruncatedToEmptyFile(t *testing.T) {
	s := openTemp(t)
	if err := s.Append(context.Background(), Record{Tool: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(s.Path(), 0); err != nil {
		t.Fatal(err)
	}
	if recs, err := s.Query(context.Background(), Query{}); err != nil || len(recs) != 0 {
		t.Errorf("query: %v %v", recs, err)
	}
	if err := s.Append(context.Background(), Record{Tool: "again"}); err != nil {
		t.Fatal(err)
	}
	if got := tools(mustQuery(t, s, Query{})); got != "again" {
		t.Errorf("got %q", got)
	}
}

// Handle gives a store for a file that is locked right now; its operations
// wait for the lock again instead of failing for good.
func TestHandleRetriesLaterOperations(t *testing.T) {
	s := openTemp(t)
	holder, err := bolt.Open(s.Path(), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(s.Path(), Options{LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("open of a locked file: %v", err)
	}
	start := time.Now()
	h, err := Handle(s.Path(), Options{LockTimeout: 2 * time.Second})
	if err != nil || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("Handle: %v after %s", err, time.Since(start))
	}
	if h.Path() != s.Path() {
		t.Errorf("path %q", h.Path())
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		holder.Close()
	}()
	if err := h.Append(context.Background(), Record{Tool: "after-lock"}); err != nil {
		t.Fatal(err)
	}
	if got := tools(mustQuery(t, s, Query{})); got != "after-lock" {
		t.Errorf("got %q", got)
	}
	if _, err := Handle("", Options{}); err == nil {
		t.Error("empty path accepted")
	}
}

// A file that makes bbolt fault is reported as corrupt, naming the path,
// without passing off the runtime's message as the reason.
func TestCorruptMessages(t *testing.T) {
	s := openTemp(t)
	for i := range 50 {
		if err := s.Append(context.Background(), Record{Tool: strings.Repeat("t", i+1), Args: []byte(`{"a":"` + strings.Repeat("x", 500) + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	good, _ := os.ReadFile(s.Path())
	faulted := 0
	for _, n := range []int{4096, 8192, 12288, 16384, 20000, len(good) / 2} {
		if n >= len(good) {
			continue
		}
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, good[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := OpenContext(context.Background(), path, Options{ReadOnly: true})
		if err == nil {
			_, err = r.Query(context.Background(), Query{})
		}
		if err == nil {
			continue // the data that survived the cut is readable
		}
		msg := err.Error()
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(msg, path) {
			t.Errorf("cut at %d: %v", n, err)
		}
		if strings.Contains(msg, "runtime error") && !strings.Contains(msg, "bbolt failed reading it") {
			t.Errorf("cut at %d: runtime error shown as the reason: %v", n, err)
		}
		if strings.Contains(msg, "bbolt failed reading it") {
			faulted++
		}
	}
	if faulted == 0 {
		t.Error("no cut made bbolt fail while reading; the test covers nothing")
	}
}
