package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// TestBenchCommand runs `fleetmux bench` against two real sshd hosts, one
// whose login shell rc costs 100 ms, and checks every path is reported.
// It asserts no timings; run with -v to see the table.
func TestBenchCommand(t *testing.T) {
	env := sshtest.New(t)
	slow := env.StartHost("slow-1", sshtest.HostOptions{SlowRC: 100 * time.Millisecond})
	other := env.StartHost("other-1", sshtest.HostOptions{})
	dir := t.TempDir()
	cfg, _ := env.WriteFleetFiles(dir, slow, other)
	cmd := exec.Command(binPath, "bench", "--ssh-config", cfg, "--hosts", "*-1", "--host", "slow-1", "--n", "10")
	cmd.Env = append(os.Environ(), "TMUX=", "TMUX_PANE=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	t.Logf("\n%s", out)
	for _, want := range []string{"local", "ssh-command", "ssh-channel", "openssh-cm", "fanout", "cold-first-call", "capture_pane", "send_keys", "round-trip", "search_panes", "kill_window"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("bench output lacks %q", want)
		}
	}
}
