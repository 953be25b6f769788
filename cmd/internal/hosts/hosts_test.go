package hosts

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsageAndBadArguments(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		rc         int
		stdout     string // a substring; "" wants it empty
		stderrLine string // the one line on stderr; "" wants it empty
	}{
		{"help", []string{"--help"}, 0, "Usage: fleetmux hosts", ""},
		{"bad flag", []string{"--bogus"}, 2, "", "fleetmux hosts: flag provided but not defined: -bogus (see fleetmux hosts --help)"},
		{"stray argument", []string{"dev-1"}, 2, "", `fleetmux hosts: unexpected argument "dev-1" (see fleetmux hosts --help)`},
	} {
		var out, errOut bytes.Buffer
		if rc := Run(tc.args, &out, &errOut); rc != tc.rc {
			t.Errorf("%s: rc %d, want %d", tc.name, rc, tc.rc)
		}
		if tc.stdout == "" && out.Len() > 0 || !strings.Contains(out.String(), tc.stdout) {
			t.Errorf("%s: stdout %q, want %q", tc.name, out.String(), tc.stdout)
		}
		if got := strings.TrimSuffix(errOut.String(), "\n"); got != tc.stderrLine {
			t.Errorf("%s: stderr %q, want %q", tc.name, got, tc.stderrLine)
		}
	}
}

// The listing resolves each alias with the user's own ssh -G and marks
// the ones --hosts selects.
func TestListing(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no OpenSSH client")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	if err := os.WriteFile(cfg, []byte("Host dev-1\n  HostName 127.0.0.1\n  User alice\n  Port 2222\nHost build\n  HostName 127.0.0.2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", dir)
	var out, errOut bytes.Buffer
	if rc := Run([]string{"--ssh-config", cfg, "--hosts", "dev-*", "--json"}, &out, &errOut); rc != 0 {
		t.Fatalf("rc %d, stderr %s", rc, errOut.String())
	}
	var rows []struct {
		Alias    string         `json:"alias"`
		Selected bool           `json:"selected"`
		Resolved map[string]any `json:"resolved"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rows) != 2 || rows[0].Alias != "dev-1" || !rows[0].Selected || rows[1].Alias != "build" || rows[1].Selected {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Resolved["user"] != "alice" || rows[0].Resolved["port"] != "2222" {
		t.Errorf("dev-1 resolved %v", rows[0].Resolved)
	}
	out.Reset()
	if rc := Run([]string{"--ssh-config", cfg, "--hosts", "dev-*"}, &out, &errOut); rc != 0 {
		t.Fatalf("table rc %d", rc)
	}
	for _, want := range []string{"ALIAS", "alice@127.0.0.1:2222", "1 selected by --hosts \"dev-*\"."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
