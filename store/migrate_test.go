package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var update = flag.Bool("update", false, "rewrite the fixtures in store/testdata")

const v1Fixture = "testdata/v1.db"

// writeV1Fixture writes a state file in the schema-1 layout: three readable
// audit records (stored out of time order), one unreadable one, a bucket
// sequence ahead of the highest key, and two hosts of which one is unreadable.
func writeV1Fixture(path string) error {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket(v1MetaBucket)
		if err != nil {
			return err
		}
		if err := meta.Put(v1KeyVersion, []byte("1")); err != nil {
			return err
		}
		audit, err := tx.CreateBucket(v1AuditBucket)
		if err != nil {
			return err
		}
		records := []string{
			`{"ts":"2025-06-01T10:00:02.5Z","pid":41,"client":"claude-code","host":"devbox-3","tool":"send_keys","args":{"pane_id":"%1","keys":{"len":5,"sha256_prefix":"2cf24dba5fb0"}},"ok":true,"duration_ms":1.5}`,
			`{"ts":"2025-06-01T10:00:01Z","pid":41,"client":"claude-code","host":"","tool":"list_sessions","args":{},"ok":true,"duration_ms":0.25}`,
			`{"ts":"2025-06-01T10:00:03Z","pid":42,"host":"","tool":"kill_server","args":{},"ok":false,"error":"Safety tier denied","duration_ms":0.1}`,
			`not json at all`,
		}
		for i, r := range records {
			k := make([]byte, 8)
			binary.BigEndian.PutUint64(k, uint64(i+1))
			if err := audit.Put(k, []byte(r)); err != nil {
				return err
			}
		}
		if err := audit.SetSequence(7); err != nil {
			return err
		}
		hosts, err := tx.CreateBucket(v1HostsBucket)
		if err != nil {
			return err
		}
		if err := hosts.Put([]byte("devbox-3"), []byte(`{"last_connect":"2025-06-01T09:59:59Z","tmux_version":"3.3a","last_error":"old failure"}`)); err != nil {
			return err
		}
		return hosts.Put([]byte("broken"), []byte(`{`))
	})
}

func TestV1FixturePresent(t *testing.T) {
	if *update {
		if err := os.MkdirAll(filepath.Dir(v1Fixture), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(v1Fixture); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := writeV1Fixture(v1Fixture); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(v1Fixture); err != nil {
		t.Fatalf("%v; regenerate with: go test ./store -run TestV1FixturePresent -update", err)
	}
}

func copyFixture(t *testing.T, src string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestMigrateFromV1(t *testing.T) {
	path := copyFixture(t, v1Fixture)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recs, err := s.Query(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Seq: 2, Time: time.Date(2025, 6, 1, 10, 0, 1, 0, time.UTC), PID: 41, Client: "claude-code", Host: "local",
			Tool: "list_sessions", Args: json.RawMessage(`{}`), Outcome: OutcomeOK, Duration: 250 * time.Microsecond},
		{Seq: 1, Time: time.Date(2025, 6, 1, 10, 0, 2, 5e8, time.UTC), PID: 41, Client: "claude-code", Host: "devbox-3",
			Tool: "send_keys", Args: json.RawMessage(`{"pane_id":"%1","keys":{"len":5,"sha256_prefix":"2cf24dba5fb0"}}`),
			Outcome: OutcomeOK, Duration: 1500 * time.Microsecond},
		{Seq: 3, Time: time.Date(2025, 6, 1, 10, 0, 3, 0, time.UTC), PID: 42, Host: "local", Tool: "kill_server",
			Args: json.RawMessage(`{}`), Outcome: OutcomeError, Error: "Safety tier denied", Duration: 100 * time.Microsecond},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	for i := range want {
		g, w := recs[i], want[i]
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) {
			t.Errorf("record %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
	hosts, err := s.HostStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantHost := HostState{Host: "devbox-3", LastConnect: time.Date(2025, 6, 1, 9, 59, 59, 0, time.UTC),
		TmuxVersion: "3.3a", LastError: "old failure"}
	if len(hosts) != 1 || hosts["devbox-3"] != wantHost {
		t.Errorf("hosts: %+v", hosts)
	}
	// The sequence continues after the legacy bucket's.
	if err := s.Append(ctx, Record{Tool: "new"}); err != nil {
		t.Fatal(err)
	}
	if last, _ := s.LastSeq(ctx); last != 8 {
		t.Errorf("next seq = %d, want 8", last)
	}
	// The legacy buckets are gone and the skip count is recorded.
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{v1MetaBucket, v1AuditBucket, v1HostsBucket} {
			if tx.Bucket(name) != nil {
				t.Errorf("legacy bucket %s left", name)
			}
		}
		meta := tx.Bucket(rootBucket).Bucket(metaBucket)
		if v := string(meta.Get(keyVersion)); v != "3" {
			t.Errorf("schema_version %q", v)
		}
		if v := string(meta.Get(keyV1Skipped)); v != "2" {
			t.Errorf("skipped count %q, want 2", v)
		}
		return nil
	})
}

// Every version from 0 (empty) up has a path to the current one, and each
// step moves forward.
func TestMigrationChain(t *testing.T) {
	for _, m := range migrations {
		if m.to <= m.from || m.to > schemaVersion || m.name == "" {
			t.Errorf("bad migration %+v", m)
		}
	}
	for v := 0; v < schemaVersion; v++ {
		seen := map[int]bool{}
		for cur := v; cur != schemaVersion; {
			m, ok := findMigration(cur)
			if !ok || seen[cur] {
				t.Fatalf("no path from version %d (stuck at %d)", v, cur)
			}
			seen[cur] = true
			cur = m.to
		}
	}
}

// Version 0 → 3: an empty file gets the full tree.
func TestMigrateEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := db.Update(func(tx *bolt.Tx) error { return migrate(tx, 0, now) }); err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(rootBucket)
		if root == nil || root.Bucket(auditBucket) == nil || root.Bucket(hostsBucket) == nil || root.Bucket(jobsBucket) == nil {
			t.Fatal("tree incomplete")
		}
		meta := root.Bucket(metaBucket)
		if string(meta.Get(keyVersion)) != "3" || string(meta.Get(keyCreated)) != "2026-01-01T00:00:00Z" {
			t.Errorf("meta: version %q created %q", meta.Get(keyVersion), meta.Get(keyCreated))
		}
		return nil
	})
	db.Close()
}
