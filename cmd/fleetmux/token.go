package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fleetmux/fleetmux/store"
)

// tokenFileName is the default bearer token file, next to the state file.
const tokenFileName = "http-token"

// minTokenLength is the shortest token accepted from a user's file.
const minTokenLength = 16

// defaultTokenPath is http-token in the directory of the state file
// (--state, FLEETMUX_STATE or the XDG default).
func defaultTokenPath(g *globalFlags) (string, error) {
	state, err := statePath(g)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(state), tokenFileName), nil
}

// loadOrCreateToken returns the bearer token stored in path. A missing
// file is created (directory 0700, file 0600, O_EXCL) holding 32 random
// bytes in hex; created reports that. An existing file must be a regular
// file of this user (not a symbolic link, FIFO or device: checked before
// and after the open, which neither follows a link nor waits for a FIFO's
// writer) that neither group nor others can access, in a directory that
// others cannot write to. Errors name the file and the fix, never the
// token.
func loadOrCreateToken(path string) (token string, created bool, err error) {
	if err := store.CheckPrivateDir(filepath.Dir(path)); err != nil {
		return "", false, fmt.Errorf("token file %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		token, err = createToken(path)
		if !errors.Is(err, fs.ErrExist) {
			return token, err == nil, err
		}
		// Another fleetmux created it meanwhile: read theirs.
		fi, err = os.Lstat(path)
	}
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	if err := store.CheckOwnFile(path, fi); err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", false, fmt.Errorf("token file: %s is a symbolic link; give the path of the file itself: %w", path, store.ErrUnsafePath)
	}
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	if err := store.CheckOwnFile(path, fi); err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", false, fmt.Errorf("token file %s has mode %04o: group or others can access it; restrict it with `chmod 600 %s` (or delete it and a new token is generated)", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	token = strings.TrimSpace(string(b))
	if len(token) < minTokenLength || strings.IndexFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return "", false, fmt.Errorf("token file %s: the token must be one word of at least %d printable ASCII characters (delete the file and a new token is generated)", path, minTokenLength)
	}
	return token, false, nil
}

// createToken writes a new random token to path, which must not exist.
func createToken(path string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("token file: random: %w", err)
	}
	token := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", err
		}
		return "", fmt.Errorf("token file: %w", err)
	}
	_, werr := f.WriteString(token + "\n")
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("token file %s: write: %w", path, err)
	}
	return token, nil
}
