package sshtest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenSSHClient checks the harness with the OpenSSH client: the written
// ssh_config and known_hosts work with StrictHostKeyChecking yes, the
// per-host TMUX_TMPDIR and the slow rc are in place, and Stop/Restart keep
// the same port and keys.
func TestOpenSSHClient(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("no OpenSSH client") // the harness itself does not need one
	}
	e := New(t)
	h := e.StartHost("alpha", HostOptions{SlowRC: 50 * time.Millisecond})
	kh := filepath.Join(e.Dir, "known_hosts")
	WriteKnownHosts(t, kh, KnownHostsOptions{Hashed: true, KeyTypes: []string{"ssh-ed25519"}}, h)
	cfg := filepath.Join(e.Dir, "ssh_config")
	e.WriteSSHConfig(cfg, SSHConfigOptions{KnownHostsFile: kh}, h)
	run := func() string {
		t.Helper()
		out, err := exec.Command(sshBin, "-F", cfg, "alpha", "echo", "$TMUX_TMPDIR").CombinedOutput()
		if err != nil {
			t.Fatalf("ssh: %v\n%s\nsshd log:\n%s", err, out, h.Log())
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(); got != h.TmuxTmpDir {
		t.Errorf("TMUX_TMPDIR = %q, want %q", got, h.TmuxTmpDir)
	}
	if n := h.RCCount(); n != 1 {
		t.Errorf("rc ran %d times, want 1", n)
	}
	h.Restart()
	run()
	h.Stop()
	if err := exec.Command(sshBin, "-F", cfg, "-o", "ConnectTimeout=2", "alpha", "true").Run(); err == nil {
		t.Error("ssh to a stopped host succeeded")
	}
}
