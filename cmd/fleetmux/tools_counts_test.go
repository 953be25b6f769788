package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestToolsetCountsJobs: `fleetmux tools` counts the jobs toolset as
// available wherever it is served (fleet mode, --extensions,
// FLEETMUX_EXTENSIONS=1), never "3 shown, 0 available", and says where it
// is served when it is not.
func TestToolsetCountsJobs(t *testing.T) {
	privateEnv(t)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte("Host dev-1\n  HostName 127.0.0.1\n  Port 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  string
		args []string
		rows map[string]string // toolset -> "SHOWN AVAILABLE"
		hint bool              // the "served in fleet mode or with --extensions" line
	}{
		{"local", "", nil, map[string]string{"jobs": "0 0", "fleet": "0 0"}, true},
		{"extensions", "", []string{"--extensions"}, map[string]string{"jobs": "3 3", "fleet": "0 0"}, false},
		{"extensions env", "1", nil, map[string]string{"jobs": "3 3"}, false},
		{"extensions read-only", "", []string{"--extensions", "--read-only"}, map[string]string{"jobs": "2 2"}, false},
		{"extensions, other toolset", "", []string{"--extensions", "--toolsets", "io"}, map[string]string{"jobs": "0 3", "io": "10 10"}, false},
		{"fleet", "", []string{"--ssh-config", cfg, "--hosts", "dev-1"}, map[string]string{"jobs": "3 3", "fleet": "1 1"}, false},
		{"fleet read-only", "", []string{"--ssh-config", cfg, "--hosts", "dev-1", "--read-only"}, map[string]string{"jobs": "2 2", "fleet": "1 1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FLEETMUX_EXTENSIONS", tc.env)
			code, out, errOut := runCLI(t, append([]string{"tools"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d; stderr %q", code, errOut)
			}
			for set, want := range tc.rows {
				m := regexp.MustCompile(`(?m)^` + set + ` +(\d+) +(\d+) `).FindStringSubmatch(out)
				if m == nil || m[1]+" "+m[2] != want {
					t.Errorf("toolset %s: %v, want %s\n%s", set, m, want, out)
				}
			}
			if got := strings.Contains(out, "the jobs toolset in fleet\nmode or with --extensions"); got != tc.hint {
				t.Errorf("hint shown %v, want %v:\n%s", got, tc.hint, out)
			}
		})
	}
}
