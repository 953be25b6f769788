package sshconfig

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeFiles creates files (relative path -> content, @DIR@ replaced by
// dir) under dir, mode 0600.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "@DIR@", dir)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func names(c *Config) []string {
	var out []string
	for _, a := range c.Aliases {
		out = append(out, a.Name)
	}
	return out
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cfg": `
Host b a
Host *.example.com web? !neg c
  HostName x
  UserKnownHostsFile "~/k h" /k2
Host a d
Include @DIR@/conf.d/*.conf
Include rel.conf
Match all
  Include @DIR@/inmatch.conf
Host "quoted name" e
Host bad "quote
Include ~nobody/x
Host=g
  HOST h`,
		"conf.d/b.conf":       "Host from-b\nInclude @DIR@/conf.d/nested.inc\n",
		"conf.d/a.conf":       "Host from-a\n",
		"conf.d/.hidden.conf": "Host hidden\n",
		"conf.d/nested.inc":   "Host nested\n  GlobalKnownHostsFile /g\n",
		".ssh/rel.conf":       "Host relative\n",
		"inmatch.conf":        "Host in-match b\n",
		"system":              "Host s1 a\nInclude sys.d/x.conf\n",
	})
	cfgPath := filepath.Join(dir, "cfg")
	c, err := Load([]Source{{Path: cfgPath, User: true, Required: true}, {Path: filepath.Join(dir, "system")}}, Options{Home: dir, UID: os.Getuid()})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"b", "a", "c", "d", "from-a", "from-b", "nested", "relative", "in-match", "quoted name", "e", "g", "h", "s1"}
	if got := names(c); !reflect.DeepEqual(got, want) {
		t.Errorf("aliases = %q, want %q", got, want)
	}
	if a := c.Aliases[3]; a.Name != "d" || a.File != cfgPath || a.Line != 6 {
		t.Errorf("alias d at %+v", a)
	}
	wantFiles := []string{cfgPath, dir + "/conf.d/a.conf", dir + "/conf.d/b.conf", dir + "/conf.d/nested.inc", dir + "/.ssh/rel.conf", dir + "/inmatch.conf", dir + "/system"}
	if !reflect.DeepEqual(c.Files, wantFiles) {
		t.Errorf("files = %q, want %q", c.Files, wantFiles)
	}
	if want := []string{"~/k h", "/k2", "/g"}; !reflect.DeepEqual(c.KnownHostsFiles, want) {
		t.Errorf("known hosts = %q, want %q", c.KnownHostsFiles, want)
	}
	// The Host line with bad quotes; ~nobody is simply no match (glob).
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "line 12") {
		t.Errorf("warnings = %q", c.Warnings)
	}
}

func TestLoadSystemIncludeTilde(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"system": "Include ~/x\nHost s\n"})
	c, err := Load([]Source{{Path: filepath.Join(dir, "system")}}, Options{Home: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names(c), []string{"s"}) || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "bad include path") {
		t.Errorf("aliases %q warnings %q", names(c), c.Warnings)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		mode    os.FileMode // of .ssh/config, when not 0
		src     Source      // Path relative to the temp dir
		wantErr error       // errors.Is target, or nil for any error
	}{
		{name: "required file missing", src: Source{Path: "nope", Required: true}, wantErr: fs.ErrNotExist},
		{name: "include loop", files: map[string]string{"cfg": "Include @DIR@/cfg\n"}, src: Source{Path: "cfg", User: true}},
		{
			name:  "world-writable checked file",
			files: map[string]string{".ssh/config": "Host a\n"},
			mode:  0o666,
			src:   Source{Path: ".ssh/config", User: true, CheckPerm: true},
		},
		{
			name:  "world-writable included file",
			files: map[string]string{"cfg": "Include @DIR@/.ssh/config\n", ".ssh/config": "Host a\n"},
			mode:  0o666,
			src:   Source{Path: "cfg", User: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			if tt.mode != 0 {
				if err := os.Chmod(filepath.Join(dir, ".ssh/config"), tt.mode); err != nil {
					t.Fatal(err)
				}
			}
			tt.src.Path = filepath.Join(dir, tt.src.Path)
			_, err := Load([]Source{tt.src}, Options{Home: dir, UID: os.Getuid()})
			if err == nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && errors.Is(err, fs.ErrNotExist) {
				t.Errorf("err %v wraps fs.ErrNotExist", err)
			}
		})
	}
	// A missing optional file is empty.
	c, err := Load([]Source{{Path: filepath.Join(t.TempDir(), "nope")}}, Options{})
	if err != nil || len(c.Aliases) != 0 || len(c.Files) != 0 {
		t.Errorf("missing optional file: %+v, %v", c, err)
	}
}
