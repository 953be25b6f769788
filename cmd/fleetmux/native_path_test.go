package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// TestNativePathReported: fleetmux doctor's tmux check and the start-up
// debug log say which path local calls take and why: the native client
// with the tmux release and protocol it speaks, or exec with the reason
// (a release the native client does not know, the FLEETMUX_TMUX_EXEC
// switch).
func TestNativePathReported(t *testing.T) {
	system, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(system, "-V").Output()
	if err != nil {
		t.Fatal(err)
	}
	systemRelease := tmux.ParseVersion(out)
	cases := []struct {
		name    string
		bin     func(t *testing.T) string
		env     map[string]string
		want    string
		startup bool // fleetmux starts with it (3.1c is refused)
	}{
		{name: "system", bin: func(*testing.T) string { return system }, startup: true,
			want: "native client (tmux " + systemRelease + " protocol 8)"},
		{name: "3.5a", bin: func(t *testing.T) string { return tmuxtest.Version(t, "3.5a") }, startup: true,
			want: "native client (tmux 3.5a protocol 8)"},
		{name: "3.1c", bin: func(t *testing.T) string { return tmuxtest.Version(t, "3.1c") },
			want: "exec: tmux 3.1c not known to the native client"},
		{name: "FLEETMUX_TMUX_EXEC", bin: func(*testing.T) string { return system }, startup: true,
			env: map[string]string{"FLEETMUX_TMUX_EXEC": "1"}, want: "exec: FLEETMUX_TMUX_EXEC=1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin := tc.bin(t)
			_, state := doctorHome(t)
			t.Setenv("LIBTMUX_TMUX_BIN", bin)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, r := runDoctorJSON(t, "--state", state)
			c := r.find("tmux")
			if len(c) == 0 || !strings.HasSuffix(c[0].Detail, "; local calls: "+tc.want) {
				t.Errorf("doctor's tmux check %+v, want its detail to end with %q", c, "; local calls: "+tc.want)
			}
			if !tc.startup {
				return
			}
			var logs bytes.Buffer
			if !tmuxUsable(newLogger("debug", &logs), &logs) {
				t.Fatalf("tmuxUsable refused %s: %s", bin, logs.String())
			}
			if want := `msg="start-up: local tmux calls" path="` + tc.want + `" tmux=` + bin; !strings.Contains(logs.String(), want) {
				t.Errorf("start-up log:\n%s\nwant a line with %s", logs.String(), want)
			}
		})
	}
}
