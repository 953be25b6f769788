package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Errors an operation can match with errors.Is. Each returned error also
// names the state file.
var (
	// ErrLocked means another process kept the state file locked for longer
	// than Options.LockTimeout (or the context's deadline).
	ErrLocked = errors.New("state file is locked by another process")
	// ErrCorrupt means the file is not a readable bbolt database, or its
	// fleetmux bucket tree is damaged.
	ErrCorrupt = errors.New("state file is corrupt or not a bbolt database")
	// ErrForeign means the file is a bbolt database that fleetmux did not
	// write (it has buckets but no fleetmux tree).
	ErrForeign = errors.New("state file is a bbolt database not written by fleetmux")
	// ErrNewerSchema means the file was written by a newer fleetmux whose
	// schema this version does not know.
	ErrNewerSchema = errors.New("state file was written by a newer fleetmux")
	// ErrOldSchema means a read found a file of an older schema version: a
	// read-only Store cannot migrate it (any write does).
	ErrOldSchema = errors.New("state file has an older schema and needs a migration")
	// ErrUnsafePath means the state file (or another private file, see
	// CheckOwnFile) is a symbolic link, not a regular file, belongs to
	// another user or sits in a directory others can write to: fleetmux
	// never writes through a link or into another user's file (a link
	// could make it truncate or chmod any file).
	ErrUnsafePath = errors.New("unsafe file path")
	// ErrReadOnly is returned by the write operations of a Store opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("state file was opened read-only")
)

// DefaultLockTimeout is the default Options.LockTimeout.
const DefaultLockTimeout = 5 * time.Second

// Options configures a Store.
type Options struct {
	// LockTimeout bounds how long one operation waits for the file lock,
	// including the wait behind other goroutines of this process. Zero
	// means DefaultLockTimeout. A context deadline that comes sooner wins.
	LockTimeout time.Duration
	// ReadOnly opens the file for reading only: OpenContext requires it to
	// exist and neither creates, migrates nor re-modes it, every operation
	// takes only a shared lock, and the write operations (Append,
	// PutHostState, Prune, Compact) fail with ErrReadOnly. A file of an
	// older schema gives ErrOldSchema. This is what a reader such as
	// `fleetmux audit` uses, so it never changes the file it inspects.
	ReadOnly bool
}

// Store is a handle on a state file. It holds no file descriptor or lock
// between operations (see the package documentation), so it needs no Close
// and is safe for concurrent use.
type Store struct {
	path string
	opts Options
	sem  chan struct{}
	now  func() time.Time
}

// Bucket and key names of schema version 3 (version 2 had no jobs bucket).
var (
	rootBucket   = []byte("fleetmux")
	metaBucket   = []byte("meta")
	auditBucket  = []byte("audit")
	hostsBucket  = []byte("hosts")
	jobsBucket   = []byte("jobs")
	keyVersion   = []byte("schema_version")
	keyCreated   = []byte("created")
	keyRetired   = []byte("retired")
	errRetired   = errors.New("store: state file was replaced by compaction")
	errEmptyFile = errors.New("store: empty state file")
	semaphoresMu sync.Mutex
	semaphores   = map[string]chan struct{}{}
)

// DefaultPath returns the default state file path:
// $XDG_STATE_HOME/fleetmux/state.db when XDG_STATE_HOME is an absolute path,
// else ~/.local/state/fleetmux/state.db.
func DefaultPath() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "fleetmux", "state.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("store: no default state path: %w", err)
	}
	return filepath.Join(home, ".local", "state", "fleetmux", "state.db"), nil
}

// Open is OpenContext with a background context; the wait is still bounded
// by opts.LockTimeout.
func Open(path string, opts Options) (*Store, error) {
	return OpenContext(context.Background(), path, opts)
}

// OpenContext validates the state file at path, creating it (mode 0600, and
// missing parent directories with mode 0700) when it does not exist, and
// migrates it to the current schema. An existing file readable by group or
// others is restricted to 0600. It returns an error matching ErrCorrupt,
// ErrForeign, ErrNewerSchema or ErrLocked, naming the path, when the file
// cannot be used.
func OpenContext(ctx context.Context, path string, opts Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	abs, opts, err := prepare(path, opts)
	if err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		return openReadOnly(ctx, abs, opts)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: create state directory: %w", err)
	}
	created := false
	switch fi, err := os.Lstat(abs); {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil:
		return nil, fmt.Errorf("store: %w", err)
	default:
		if err := checkFile(abs, fi); err != nil {
			return nil, err
		}
	}
	s := &Store{path: abs, opts: opts, sem: semaphoreFor(abs), now: time.Now}
	// A write operation initialises or migrates the tree (ensureCurrent).
	if err := s.update(ctx, func(*bolt.Bucket) error { return nil }); err != nil {
		return nil, err
	}
	if created {
		syncDir(filepath.Dir(abs)) // keep the new file's directory entry across a power loss
	}
	return s, nil
}

// openReadOnly is OpenContext for Options.ReadOnly: the file must exist and
// be a fleetmux state file of the current schema (or empty).
func openReadOnly(ctx context.Context, abs string, opts Options) (*Store, error) {
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := checkFile(abs, fi); err != nil {
		return nil, err
	}
	s := &Store{path: abs, opts: opts, sem: semaphoreFor(abs), now: time.Now}
	if err := s.view(ctx, func(*bolt.Bucket) error { return nil }); err != nil {
		return nil, err
	}
	return s, nil
}

// checkFile refuses a state file that is not a regular file of the
// current user (fi is from Lstat: a symbolic link is refused as such).
func checkFile(abs string, fi fs.FileInfo) error {
	if err := CheckOwnFile(abs, fi); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// CheckOwnFile refuses a private file (the state file, the HTTP token
// file) that is not a regular file of the current user. fi is from Lstat
// (a symbolic link is refused as such) or from Stat of the open
// descriptor (a FIFO or device swapped in is refused too). Errors name
// path; all but a directory wrap ErrUnsafePath.
func CheckOwnFile(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link; give the path of the file itself: %w", path, ErrUnsafePath)
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a file", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s): %w", path, fileKind(fi.Mode()), ErrUnsafePath)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d): %w", path, st.Uid, os.Geteuid(), ErrUnsafePath)
	}
	return nil
}

// CheckPrivateDir refuses a directory to keep a private file in that
// other users could write to (so replace the file, or plant a link or a
// FIFO under its name): writable by group or others without the sticky
// bit, or owned by another user than the current one or root. A missing
// directory is fine (it is created 0700).
func CheckPrivateDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("directory %s has mode %04o: other users can write to it and replace the file; use a private directory (chmod 700 %s): %w", dir, fi.Mode().Perm(), dir, ErrUnsafePath)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() && st.Uid != 0 {
		return fmt.Errorf("directory %s belongs to uid %d, not to you (uid %d): %w", dir, st.Uid, os.Geteuid(), ErrUnsafePath)
	}
	return nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// Handle returns a Store for path without touching the file: the first
// write creates (or migrates) it, as after OpenContext. It is for a caller
// whose OpenContext failed with ErrLocked and that wants its later
// operations to try again rather than give up on the file for good.
func Handle(path string, opts Options) (*Store, error) {
	abs, opts, err := prepare(path, opts)
	if err != nil {
		return nil, err
	}
	return &Store{path: abs, opts: opts, sem: semaphoreFor(abs), now: time.Now}, nil
}

// prepare checks path and makes it absolute, and fills in option
// defaults.
func prepare(path string, opts Options) (string, Options, error) {
	if path == "" {
		return "", opts, errors.New("store: empty state file path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", opts, fmt.Errorf("store: %w", err)
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	return abs, opts, nil
}

// Path returns the absolute path of the state file.
func (s *Store) Path() string { return s.path }

func semaphoreFor(path string) chan struct{} {
	semaphoresMu.Lock()
	defer semaphoresMu.Unlock()
	sem, ok := semaphores[path]
	if !ok {
		sem = make(chan struct{}, 1)
		semaphores[path] = sem
	}
	return sem
}

// view runs fn in a read-only transaction. root is nil when the file holds
// no data yet.
func (s *Store) view(ctx context.Context, fn func(root *bolt.Bucket) error) error {
	err := s.do(ctx, false, func(tx *bolt.Tx) error {
		root, err := s.checkCurrent(tx)
		if err != nil {
			return err
		}
		return fn(root)
	})
	if errors.Is(err, errEmptyFile) {
		// A zero-length file holds no data yet; bbolt would try to
		// initialise it, which a reader must not do.
		return fn(nil)
	}
	return err
}

// update runs fn in a read-write transaction on a current tree.
func (s *Store) update(ctx context.Context, fn func(root *bolt.Bucket) error) error {
	if s.opts.ReadOnly {
		return s.readOnlyError()
	}
	return s.do(ctx, true, func(tx *bolt.Tx) error {
		root, err := s.ensureCurrent(tx)
		if err != nil {
			return err
		}
		return fn(root)
	})
}

// do opens the file, runs one transaction and closes the file, within the
// lock deadline.
func (s *Store) do(ctx context.Context, write bool, fn func(tx *bolt.Tx) error) error {
	return s.serialize(ctx, func(deadline time.Time) error { return s.once(write, deadline, fn) })
}

// serialize runs attempt under the in-process semaphore of the file, with the
// deadline of this operation. It repeats attempt while the file it opened
// turns out to be one that Compact replaced.
func (s *Store) serialize(ctx context.Context, attempt func(deadline time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %s: %w", s.path, err)
	}
	deadline := time.Now().Add(s.opts.LockTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	release, err := s.acquire(ctx, deadline)
	if err != nil {
		return err
	}
	defer release()
	for retired := 0; ; retired++ {
		err := attempt(deadline)
		if !errors.Is(err, errRetired) {
			return err
		}
		if retired == 3 {
			return fmt.Errorf("store: %s is an old copy that compaction replaced and retired; remove it", s.path)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("store: %s: %w", s.path, err)
		}
		if !time.Now().Before(deadline) {
			return s.lockedError()
		}
	}
}

func (s *Store) acquire(ctx context.Context, deadline time.Time) (release func(), err error) {
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem }, nil
	default:
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("store: %s: %w", s.path, ctx.Err())
	case <-timer.C:
		return nil, s.lockedError()
	}
}

func (s *Store) readOnlyError() error {
	return fmt.Errorf("store: %s: %w", s.path, ErrReadOnly)
}

func (s *Store) lockedError() error {
	return fmt.Errorf("store: %s: %w (lock wait limit %s)", s.path, ErrLocked, s.opts.LockTimeout)
}

func (s *Store) corruptError(cause any) error {
	if err, ok := cause.(error); ok {
		return fmt.Errorf("store: %s: %w: %w", s.path, ErrCorrupt, err)
	}
	return fmt.Errorf("store: %s: %w: %v", s.path, ErrCorrupt, cause)
}

// panicError is corruptError for a panic (or memory fault) inside bbolt,
// which only a damaged file causes: the runtime's own text ("invalid memory
// address or nil pointer dereference") would mean nothing to a user.
func (s *Store) panicError(r any) error {
	if err, ok := r.(error); ok {
		return fmt.Errorf("store: %s: %w (bbolt failed reading it: %w)", s.path, ErrCorrupt, err)
	}
	return fmt.Errorf("store: %s: %w (bbolt failed reading it: %v)", s.path, ErrCorrupt, r)
}

// once is one open-transaction-close cycle.
func (s *Store) once(write bool, deadline time.Time, fn func(tx *bolt.Tx) error) error {
	return s.withDB(write, deadline, func(db *bolt.DB) error {
		if write {
			return db.Update(fn)
		}
		return db.View(fn)
	})
}

// withDB opens the file (shared lock for reads, exclusive for writes), runs
// fn and closes the file. bbolt panics (or faults) on some damaged files; the
// panic becomes ErrCorrupt and the descriptor, with its lock, is released.
func (s *Store) withDB(write bool, deadline time.Time, fn func(db *bolt.DB) error) (err error) {
	timeout := max(time.Until(deadline), time.Nanosecond) // 0 would wait forever
	// A truncated file makes bbolt read past the end of its mapping; turn the
	// SIGBUS into a recoverable panic instead of a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var file *os.File
	var db *bolt.DB
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				_ = db.Close()
			} else if file != nil {
				_ = file.Close()
			}
			err = s.panicError(r)
		}
	}()
	db, err = bolt.Open(s.path, 0o600, &bolt.Options{
		Timeout:  timeout,
		ReadOnly: !write,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			// Never through a symbolic link (ELOOP), never another user's
			// file; a file readable by others is restricted on the open
			// descriptor, never by path.
			f, err := os.OpenFile(name, flag|syscall.O_NOFOLLOW, perm)
			if errors.Is(err, syscall.ELOOP) {
				return nil, fmt.Errorf("store: %s is a symbolic link; give the path of the file itself: %w", name, ErrUnsafePath)
			}
			if err == nil {
				fi, serr := f.Stat()
				if serr == nil {
					serr = checkFile(name, fi)
				}
				if serr == nil && write && fi.Mode().Perm()&0o077 != 0 {
					if cerr := f.Chmod(0o600); cerr != nil {
						serr = fmt.Errorf("store: restrict %s to mode 0600: %w", name, cerr)
					}
				}
				if serr != nil {
					_ = f.Close()
					return nil, serr
				}
			}
			if err == nil && !write {
				if fi, serr := f.Stat(); serr == nil && fi.Size() == 0 {
					_ = f.Close()
					return nil, errEmptyFile
				}
			}
			file = f
			return f, err
		},
	})
	if err != nil {
		if errors.Is(err, errEmptyFile) {
			return errEmptyFile
		}
		return s.openError(err)
	}
	err = fn(db)
	cerr := db.Close()
	db = nil
	if err == nil && cerr != nil {
		err = fmt.Errorf("store: close %s: %w", s.path, cerr)
	}
	return err
}

func (s *Store) openError(err error) error {
	var pe *fs.PathError
	var errno syscall.Errno
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return s.lockedError()
	case errors.Is(err, ErrUnsafePath):
		return err
	case errors.As(err, &pe), errors.As(err, &errno):
		return fmt.Errorf("store: open %s: %w", s.path, err)
	default:
		return s.corruptError(err)
	}
}

// inspect reports the schema version of the file open in tx (0 for an empty
// file) and, for files with the current tree, its root bucket.
func (s *Store) inspect(tx *bolt.Tx) (root *bolt.Bucket, version int, err error) {
	root = tx.Bucket(rootBucket)
	if root == nil {
		if k, _ := tx.Cursor().First(); k == nil {
			return nil, 0, nil
		}
		if v := legacyVersion(tx); v > 0 {
			return nil, v, nil
		}
		return nil, 0, fmt.Errorf("store: %s: %w", s.path, ErrForeign)
	}
	meta := root.Bucket(metaBucket)
	if meta == nil {
		return nil, 0, s.corruptError("fleetmux tree has no meta bucket")
	}
	if meta.Get(keyRetired) != nil {
		return nil, 0, errRetired
	}
	v, err := parseVersion(meta.Get(keyVersion))
	if err != nil {
		return nil, 0, s.corruptError(err)
	}
	if v > schemaVersion {
		return nil, v, fmt.Errorf("store: %s: %w (schema version %d, this fleetmux knows up to %d)",
			s.path, ErrNewerSchema, v, schemaVersion)
	}
	if v == schemaVersion && (root.Bucket(auditBucket) == nil || root.Bucket(hostsBucket) == nil || root.Bucket(jobsBucket) == nil) {
		return nil, v, s.corruptError("fleetmux tree is incomplete")
	}
	return root, v, nil
}

// checkCurrent returns the root bucket of a file at the current schema
// version, or nil when the file is empty.
func (s *Store) checkCurrent(tx *bolt.Tx) (*bolt.Bucket, error) {
	root, v, err := s.inspect(tx)
	switch {
	case err != nil:
		return nil, err
	case v == 0:
		return nil, nil
	case v < schemaVersion:
		return nil, fmt.Errorf("store: %s: %w (schema version %d; any write by fleetmux migrates it)", s.path, ErrOldSchema, v)
	}
	return root, nil
}

// ensureCurrent is checkCurrent for a write transaction: it creates the tree
// in an empty file and migrates an older one.
func (s *Store) ensureCurrent(tx *bolt.Tx) (*bolt.Bucket, error) {
	root, v, err := s.inspect(tx)
	if err != nil {
		return nil, err
	}
	if v == schemaVersion {
		return root, nil
	}
	if err := migrate(tx, v, s.now().UTC()); err != nil {
		return nil, fmt.Errorf("store: migrate %s from schema version %d: %w", s.path, v, err)
	}
	return tx.Bucket(rootBucket), nil
}
