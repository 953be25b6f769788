package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// MaxArgsBytes bounds Record.Args; a larger summary is replaced by its size
// and digest.
const MaxArgsBytes = 64 << 10

// pruneBatch bounds the deletions of one Prune transaction so that other
// processes' appends never wait long behind retention.
const pruneBatch = 2000

// auditKey is the 16-byte key of a record: Unix nanoseconds then sequence,
// both big-endian, so keys sort by time and ties by commit order.
func auditKey(t time.Time, seq uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(max(t.UnixNano(), 0)))
	binary.BigEndian.PutUint64(k[8:], seq)
	return k
}

func keySeq(k []byte) uint64 { return binary.BigEndian.Uint64(k[8:16]) }

// Append stores records and returns once they are committed to disk (after
// fdatasync), assigning each a sequence number. The records must already be
// redacted (see Redact); Append only bounds Error and Args and fills in a
// zero Time.
func (s *Store) Append(ctx context.Context, recs ...Record) error {
	if len(recs) == 0 {
		return nil
	}
	keys, vals, err := s.encode(recs)
	if err != nil {
		return err
	}
	return s.appendEncoded(ctx, keys, vals)
}

// encode normalizes records as Append stores them and encodes each.
func (s *Store) encode(recs []Record) ([]time.Time, [][]byte, error) {
	now := s.now()
	keys := make([]time.Time, len(recs))
	vals := make([][]byte, len(recs))
	for i, r := range recs {
		r = normalize(r, now)
		if len(r.Args) > MaxArgsBytes {
			sum := sha256.Sum256(r.Args)
			r.Args, _ = json.Marshal(map[string]any{"args_too_large": map[string]any{
				"bytes": len(r.Args), "sha256_prefix": hex.EncodeToString(sum[:])[:12],
			}})
		}
		v, err := json.Marshal(r)
		if err != nil {
			return nil, nil, fmt.Errorf("store: encode audit record: %w", err)
		}
		keys[i], vals[i] = r.Time, v
	}
	return keys, vals, nil
}

// appendEncoded commits encoded records (keyed by their times) in one
// transaction.
func (s *Store) appendEncoded(ctx context.Context, keys []time.Time, vals [][]byte) error {
	return s.update(ctx, func(root *bolt.Bucket) error {
		b := root.Bucket(auditBucket)
		b.FillPercent = 0.9 // keys arrive nearly in order
		for i := range vals {
			seq, err := b.NextSequence()
			if err != nil {
				return fmt.Errorf("store: append: %w", err)
			}
			if err := b.Put(auditKey(keys[i], seq), vals[i]); err != nil {
				return fmt.Errorf("store: append: %w", err)
			}
		}
		return nil
	})
}

// Query returns the audit records that match q, oldest first. With q.Limit
// set it returns the newest q.Limit matches. A record whose value cannot be
// decoded is returned (when no field filter is set) as a placeholder with
// Outcome "?" and the decoding error.
func (s *Store) Query(ctx context.Context, q Query) ([]Record, error) {
	if q.Limit < 0 {
		return nil, fmt.Errorf("store: negative query limit %d", q.Limit)
	}
	// The journals are read before the state file: a record a writer
	// folds in between is then found in the state file (read the other
	// way round, a fold committed after the state file was read and
	// truncated before the journal was read hides it).
	var unfolded []Record
	if q.AfterSeq == 0 {
		unfolded = s.journalRecords(q)
	}
	var lo, hi []byte
	if !q.Since.IsZero() {
		lo = auditKey(q.Since, 0)
	}
	if !q.Until.IsZero() {
		hi = auditKey(q.Until, 0)
	}
	var out []Record
	err := s.view(ctx, func(root *bolt.Bucket) error {
		out = nil // the transaction may be retried
		if root == nil {
			return nil
		}
		c := root.Bucket(auditBucket).Cursor()
		take := func(k, v []byte) {
			if len(k) != 16 || keySeq(k) <= q.AfterSeq {
				return
			}
			if r := decodeRecord(k, v); q.match(&r) {
				out = append(out, r)
			}
		}
		if q.Limit == 0 {
			k, v := c.First()
			if lo != nil {
				k, v = c.Seek(lo)
			}
			for ; k != nil && (hi == nil || bytes.Compare(k, hi) < 0); k, v = c.Next() {
				take(k, v)
			}
			return nil
		}
		var k, v []byte
		if hi == nil {
			k, v = c.Last()
		} else if k, _ = c.Seek(hi); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && (lo == nil || bytes.Compare(k, lo) >= 0) && len(out) < q.Limit; k, v = c.Prev() {
			take(k, v)
		}
		slices.Reverse(out)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return withJournals(q, out, unfolded), nil
}

func decodeRecord(k, v []byte) Record {
	var r Record
	if err := json.Unmarshal(v, &r); err != nil {
		r = Record{
			Time:    time.Unix(0, int64(binary.BigEndian.Uint64(k))).UTC(),
			Outcome: "?",
			Error:   fmt.Sprintf("unreadable audit record: %v", err),
		}
	}
	r.Seq = keySeq(k)
	return r
}

// LastSeq returns the sequence number of the most recently committed record
// (0 when there is none). Records appended later have larger numbers.
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	var seq uint64
	err := s.view(ctx, func(root *bolt.Bucket) error {
		if root != nil {
			seq = root.Bucket(auditBucket).Sequence()
		}
		return nil
	})
	return seq, err
}

// Prune deletes audit records (and jobs, see pruneJobs) older than
// olderThan (when > 0), then, when
// maxBytes > 0, the oldest records until the audit data (the sum of key and
// value sizes) is at most maxBytes. It works in transactions of at most
// pruneBatch deletions, so appends from other goroutines and processes slip
// in between; callers run it in the background (at start-up and then
// periodically) rather than on a tool call's path. It returns how many
// records it deleted. The file keeps its size until Compact.
func (s *Store) Prune(ctx context.Context, olderThan time.Duration, maxBytes int64) (deleted int, err error) {
	if olderThan > 0 {
		n, err := s.pruneJobs(ctx, s.now().Add(-olderThan))
		deleted += n
		if err != nil {
			return deleted, err
		}
		cutoff := auditKey(s.now().Add(-olderThan), 0)
		for {
			n, _, more, err := s.deleteOldest(ctx, cutoff, -1)
			deleted += n
			if err != nil {
				return deleted, err
			}
			if !more {
				break
			}
		}
	}
	if maxBytes > 0 {
		total, err := s.auditBytes(ctx)
		if err != nil {
			return deleted, err
		}
		for excess := total - maxBytes; excess > 0; {
			n, freed, more, err := s.deleteOldest(ctx, nil, excess)
			deleted += n
			if err != nil {
				return deleted, err
			}
			excess -= freed
			if !more {
				break
			}
		}
	}
	return deleted, nil
}

// deleteOldest deletes up to pruneBatch of the oldest records with keys
// below cutoff (nil: any), stopping once maxFree bytes are freed (<0: no
// limit). more reports that it stopped at the batch size.
func (s *Store) deleteOldest(ctx context.Context, cutoff []byte, maxFree int64) (n int, freed int64, more bool, err error) {
	err = s.update(ctx, func(root *bolt.Bucket) error {
		freed, more = 0, false // the transaction may be retried
		b := root.Bucket(auditBucket)
		var doomed [][]byte
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if (cutoff != nil && bytes.Compare(k, cutoff) >= 0) || (maxFree >= 0 && freed >= maxFree) {
				break
			}
			if len(doomed) == pruneBatch {
				more = true
				break
			}
			doomed = append(doomed, bytes.Clone(k))
			freed += int64(len(k) + len(v))
		}
		n = len(doomed)
		return deleteKeys(b, doomed)
	})
	if err != nil {
		return 0, 0, false, err
	}
	return n, freed, more, nil
}

func deleteKeys(b *bolt.Bucket, keys [][]byte) error {
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return fmt.Errorf("store: prune: %w", err)
		}
	}
	return nil
}

// auditBytes sums the key and value sizes of all audit records.
func (s *Store) auditBytes(ctx context.Context) (int64, error) {
	var total int64
	err := s.view(ctx, func(root *bolt.Bucket) error {
		total = 0
		if root == nil {
			return nil
		}
		return root.Bucket(auditBucket).ForEach(func(k, v []byte) error {
			total += int64(len(k) + len(v))
			return nil
		})
	})
	return total, err
}
