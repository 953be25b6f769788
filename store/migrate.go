package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// schemaVersion is the version of the bucket tree this package writes.
const schemaVersion = 3

// A migration moves a file from one schema version to a later one inside a
// single write transaction, so a failure or a crash leaves the file as it
// was. It ends by writing its target version.
type migration struct {
	from, to int
	name     string
	apply    func(tx *bolt.Tx, now time.Time) error
}

// migrations are tried in order; from 0 means an empty file.
var migrations = []migration{
	{from: 0, to: 3, name: "create the fleetmux tree", apply: createTree},
	{from: 1, to: 2, name: "move the flat v1 buckets into the fleetmux tree", apply: migrateV1},
	{from: 2, to: 3, name: "add the jobs bucket", apply: addJobs},
}

// migrate brings the file in tx from version `from` to schemaVersion.
func migrate(tx *bolt.Tx, from int, now time.Time) error {
	for v := from; v != schemaVersion; {
		m, ok := findMigration(v)
		if !ok {
			return fmt.Errorf("no migration from schema version %d", v)
		}
		if err := m.apply(tx, now); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		v = m.to
	}
	return nil
}

func findMigration(from int) (migration, bool) {
	for _, m := range migrations {
		if m.from == from {
			return m, true
		}
	}
	return migration{}, false
}

func parseVersion(b []byte) (int, error) {
	v, err := strconv.Atoi(string(b))
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bad schema version %q", b)
	}
	return v, nil
}

// createTree creates the empty tree of the current version.
func createTree(tx *bolt.Tx, now time.Time) error {
	if err := createTreeV2(tx, now); err != nil {
		return err
	}
	return addJobs(tx, now)
}

// addJobs adds the jobs bucket of version 3 to a version-2 tree.
func addJobs(tx *bolt.Tx, _ time.Time) error {
	root := tx.Bucket(rootBucket)
	if root == nil {
		return errors.New("no fleetmux tree")
	}
	if _, err := root.CreateBucketIfNotExists(jobsBucket); err != nil {
		return err
	}
	return root.Bucket(metaBucket).Put(keyVersion, []byte("3"))
}

// createTreeV2 creates the empty version-2 tree.
func createTreeV2(tx *bolt.Tx, now time.Time) error {
	root, err := tx.CreateBucketIfNotExists(rootBucket)
	if err != nil {
		return err
	}
	meta, err := root.CreateBucketIfNotExists(metaBucket)
	if err != nil {
		return err
	}
	for _, name := range [][]byte{auditBucket, hostsBucket} {
		if _, err := root.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	if meta.Get(keyCreated) == nil {
		if err := meta.Put(keyCreated, []byte(now.Format(time.RFC3339Nano))); err != nil {
			return err
		}
	}
	return meta.Put(keyVersion, []byte(strconv.Itoa(2)))
}

// Version 1 layout: top-level buckets, audit keyed by an 8-byte sequence.
var (
	v1MetaBucket  = []byte("meta")
	v1AuditBucket = []byte("audit")
	v1HostsBucket = []byte("hosts")
	v1KeyVersion  = []byte("version")
	keyV1Skipped  = []byte("migrated_v1_skipped")
)

// v1Record is an audit record of schema version 1.
type v1Record struct {
	TS         string          `json:"ts"` // RFC 3339 with nanoseconds
	PID        int             `json:"pid"`
	Client     string          `json:"client"`
	Host       string          `json:"host"` // "" meant this machine
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"` // already redacted
	OK         bool            `json:"ok"`
	Error      string          `json:"error"`
	DurationMS float64         `json:"duration_ms"`
}

// v1Host is a host entry of schema version 1.
type v1Host struct {
	LastConnect string `json:"last_connect"` // RFC 3339
	TmuxVersion string `json:"tmux_version"`
	LastError   string `json:"last_error"`
}

// legacyVersion returns 1 for a version-1 file and 0 otherwise.
func legacyVersion(tx *bolt.Tx) int {
	meta := tx.Bucket(v1MetaBucket)
	if meta == nil {
		return 0
	}
	if v, err := parseVersion(meta.Get(v1KeyVersion)); err == nil && v == 1 {
		return 1
	}
	return 0
}

// migrateV1 rewrites version-1 audit records under time-ordered keys (keeping
// their sequence numbers), converts the host entries and drops the old
// buckets. Records that cannot be read are counted in meta, not copied.
func migrateV1(tx *bolt.Tx, now time.Time) error {
	if err := createTreeV2(tx, now); err != nil {
		return err
	}
	root := tx.Bucket(rootBucket)
	audit, hosts, meta := root.Bucket(auditBucket), root.Bucket(hostsBucket), root.Bucket(metaBucket)
	skipped := 0
	if old := tx.Bucket(v1AuditBucket); old != nil {
		maxSeq := old.Sequence()
		err := old.ForEach(func(k, v []byte) error {
			var lr v1Record
			if len(k) != 8 || json.Unmarshal(v, &lr) != nil {
				skipped++
				return nil
			}
			t, err := time.Parse(time.RFC3339Nano, lr.TS)
			if err != nil {
				skipped++
				return nil
			}
			seq := binary.BigEndian.Uint64(k)
			maxSeq = max(maxSeq, seq)
			r := Record{
				Time: t, PID: lr.PID, Client: lr.Client, Host: lr.Host, Tool: lr.Tool,
				Args: lr.Args, Outcome: OutcomeOK, Error: lr.Error,
				Duration: time.Duration(lr.DurationMS * float64(time.Millisecond)),
			}
			if r.Host == "" {
				r.Host = "local"
			}
			if !lr.OK {
				r.Outcome = OutcomeError
			}
			val, err := json.Marshal(normalize(r, now))
			if err != nil {
				return err
			}
			return audit.Put(auditKey(r.Time, seq), val)
		})
		if err != nil {
			return err
		}
		if err := audit.SetSequence(maxSeq); err != nil {
			return err
		}
	}
	if old := tx.Bucket(v1HostsBucket); old != nil {
		err := old.ForEach(func(k, v []byte) error {
			var lh v1Host
			if json.Unmarshal(v, &lh) != nil {
				skipped++
				return nil
			}
			st := HostState{Host: string(k), TmuxVersion: lh.TmuxVersion, LastError: lh.LastError}
			st.LastConnect, _ = time.Parse(time.RFC3339Nano, lh.LastConnect)
			val, err := json.Marshal(HostState{}.merge(st))
			if err != nil {
				return err
			}
			return hosts.Put(k, val)
		})
		if err != nil {
			return err
		}
	}
	for _, name := range [][]byte{v1AuditBucket, v1HostsBucket, v1MetaBucket} {
		if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
	}
	if skipped > 0 {
		if err := meta.Put(keyV1Skipped, []byte(strconv.Itoa(skipped))); err != nil {
			return err
		}
	}
	return meta.Put(keyVersion, []byte("2"))
}
