package transport

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPathCache: a name resolves through PATH, a changed PATH resolves
// again, a name with a slash is used as given, a missing name errors.
func TestPathCache(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "prog"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var pc PathCache
	for _, tc := range []struct {
		path, name, want string
		wantErr          bool
	}{
		{dirs[0], "prog", filepath.Join(dirs[0], "prog"), false},
		{dirs[1], "prog", filepath.Join(dirs[1], "prog"), false},
		{dirs[0], "prog", filepath.Join(dirs[0], "prog"), false}, // cached answer for this PATH
		{dirs[0], "./rel/prog", "./rel/prog", false},
		{dirs[0], "absent-prog", "", true},
	} {
		t.Setenv("PATH", tc.path)
		got, err := pc.LookPath(tc.name)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("PATH=%s LookPath(%q) = %q, %v; want %q (error %v)", tc.path, tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}
