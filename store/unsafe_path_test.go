package store

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// TestStatePathSymlinks: the state file is never opened through a
// symbolic link: the link's target is neither changed (mode, content) nor
// created, and the error says why.
func TestStatePathSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "state.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		_, err := Open(link, Options{ReadOnly: ro})
		if !errors.Is(err, ErrUnsafePath) {
			t.Errorf("read-only %v: err = %v, want ErrUnsafePath", ro, err)
		}
	}
	fi, _ := os.Stat(target)
	data, _ := os.ReadFile(target)
	if fi.Mode().Perm() != 0o644 || string(data) != "precious" {
		t.Errorf("target changed: mode %v, content %q", fi.Mode().Perm(), data)
	}

	// A dangling link does not create its target.
	dangling := filepath.Join(dir, "dangling.db")
	created := filepath.Join(dir, "created-by-link")
	if err := os.Symlink(created, dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dangling, Options{}); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("dangling link: err = %v, want ErrUnsafePath", err)
	}
	if _, err := os.Lstat(created); err == nil {
		t.Error("a dangling link's target was created")
	}

	// A link swapped in after Open is not followed by later operations.
	real := filepath.Join(dir, "real.db")
	s, err := Open(real, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(real)
	if err := os.Symlink(target, real); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), Record{Tool: "x", Host: "local", Outcome: OutcomeOK}); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("append through a swapped-in link: err = %v, want ErrUnsafePath", err)
	}
	if data, _ := os.ReadFile(target); string(data) != "precious" {
		t.Errorf("target written through a link: %q", data)
	}
}

// TestStatePathModeAndOwner: a file readable by others is restricted to
// 0600 on its descriptor; another user's file is refused.
func TestStatePathModeAndOwner(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.db")
	if _, err := Open(p, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p, Options{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if os.Geteuid() != 0 {
		return // only root can give a file away
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	if err := os.Chown(p, uid, -1); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		if _, err := Open(p, Options{ReadOnly: ro}); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("read-only %v: foreign file: err = %v, want ErrUnsafePath", ro, err)
		}
	}
}
