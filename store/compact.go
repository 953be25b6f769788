package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// testHookCompactLocked, when set by a test, runs while Compact holds the
// lock of the file it is about to replace.
var testHookCompactLocked func()

// compactTxMaxSize bounds the transactions that fill the compacted copy.
const compactTxMaxSize = 4 << 20

// Compact rewrites the state file without its free pages (bbolt files never
// shrink on their own) and atomically renames the copy over the original,
// keeping mode 0600. It holds the file's exclusive lock throughout, so other
// processes' operations wait (up to their lock timeout) rather than write to
// the old file; a process that had opened the old file before the rename
// finds it marked retired and reopens the path.
func (s *Store) Compact(ctx context.Context) error {
	if s.opts.ReadOnly {
		return s.readOnlyError()
	}
	return s.serialize(ctx, func(deadline time.Time) error {
		return s.withDB(true, deadline, func(src *bolt.DB) error {
			return s.compactLocked(ctx, src)
		})
	})
}

func (s *Store) compactLocked(ctx context.Context, src *bolt.DB) error {
	// Validate (and migrate) first; this also detects a retired file.
	if err := src.Update(func(tx *bolt.Tx) error {
		_, err := s.ensureCurrent(tx)
		return err
	}); err != nil {
		return err
	}
	if testHookCompactLocked != nil {
		testHookCompactLocked()
	}
	tmp := s.path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: compact: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = os.Remove(tmp)
		}
	}()
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("store: compact: create %s: %w", tmp, err)
	}
	if err := bolt.Compact(dst, src, compactTxMaxSize); err != nil {
		_ = dst.Close()
		return fmt.Errorf("store: compact %s: %w", s.path, err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("store: compact: close %s: %w", tmp, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: compact %s: %w", s.path, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("store: compact: %w", err)
	}
	done = true
	syncDir(filepath.Dir(s.path))
	// The old inode is now unlinked; processes blocked on its lock must not
	// write to it.
	if err := src.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(rootBucket).Bucket(metaBucket).Put(keyRetired, []byte(s.now().UTC().Format(time.RFC3339Nano)))
	}); err != nil {
		return fmt.Errorf("store: compact: mark replaced file: %w", err)
	}
	return nil
}

// syncDir makes a rename durable; failure only weakens crash safety.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
