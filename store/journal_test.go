package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

func journalRec(i int) Record {
	return Record{Time: time.Unix(1_700_000_000+int64(i), 0).UTC(), SessionID: "s", Host: "local", Tool: fmt.Sprintf("tool-%d", i), Outcome: OutcomeOK}
}

// TestJournalAppendQueryClose: records appended through a journal are
// seen by Query at once (folded or not), reach the state file, and Close
// removes the journal.
func TestJournalAppendQueryClose(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	j, err := s.OpenJournal(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := j.Append(ctx, journalRec(i)); err != nil {
			t.Fatal(err)
		}
		if got := len(mustQuery(t, s, Query{})); got != i+1 {
			t.Fatalf("after %d appends Query sees %d records", i+1, got)
		}
	}
	if got := mustQuery(t, s, Query{Limit: 3}); len(got) != 3 || got[2].Tool != "tool-19" || got[0].Tool != "tool-17" {
		t.Fatalf("newest 3: %+v", got)
	}
	if got := mustQuery(t, s, Query{Tool: "tool-7"}); len(got) != 1 {
		t.Fatalf("filtered: %+v", got)
	}
	if err := j.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if p := s.journalPaths(); len(p) != 0 {
		t.Fatalf("journal left after Close: %v", p)
	}
	recs := mustQuery(t, s, Query{})
	if len(recs) != 20 {
		t.Fatalf("state file holds %d records, want 20", len(recs))
	}
	for _, r := range recs {
		if r.Seq == 0 || r.JID == "" {
			t.Fatalf("record not folded: %+v", r)
		}
	}
	// A closed journal appends straight to the state file.
	if err := j.Append(ctx, journalRec(20)); err != nil || len(mustQuery(t, s, Query{})) != 21 {
		t.Fatalf("append after close: %v", err)
	}
}

// writeOrphan writes a journal file as a killed writer leaves it: records,
// then a torn line.
func writeOrphan(t *testing.T, s *Store, name string, recs []Record) string {
	t.Helper()
	path := s.path + journalInfix + name
	var b []byte
	for _, r := range recs {
		v, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, v...), '\n')
	}
	b = append(b, `{"time":"2026-`...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestJournalReplay folds an orphan journal once: records already
// committed (same journal id) and the torn last line are not added, the
// file is removed, and a journal its writer still holds is left alone.
func TestJournalReplay(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	var recs []Record
	for i := range 5 {
		r := journalRec(i)
		r.JID = fmt.Sprintf("jid-%d", i)
		recs = append(recs, r)
	}
	if err := s.Append(ctx, recs[0], recs[1]); err != nil { // folded before the kill
		t.Fatal(err)
	}
	orphan := writeOrphan(t, s, "4242.dead", recs)
	// A reader (read-only, as fleetmux audit) sees the orphan's records once.
	ro, err := Open(s.path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, ro, Query{}); len(got) != 5 {
		t.Fatalf("reader sees %d records, want 5", len(got))
	}
	if _, err := ro.ReplayJournals(ctx); err == nil {
		t.Fatal("a read-only store replayed journals")
	}
	// A live journal: its writer holds the lock.
	live := writeOrphan(t, s, "4243.live", []Record{{Time: time.Unix(1_800_000_000, 0), Tool: "live", JID: "jid-live", Outcome: OutcomeOK}})
	lf, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	n, err := s.ReplayJournals(ctx)
	if err != nil || n != 3 {
		t.Fatalf("replay added %d (%v), want 3", n, err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphan journal still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("live journal removed: %v", err)
	}
	folded := mustQuery(t, s, Query{AfterSeq: 0, Tool: ""})
	if len(folded) != 6 { // 5 folded + the live one, read from its journal
		t.Fatalf("after replay Query sees %d records, want 6", len(folded))
	}
	if n, err := s.ReplayJournals(ctx); err != nil || n != 0 {
		t.Fatalf("second replay added %d (%v)", n, err)
	}
}
