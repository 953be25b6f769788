package sshtest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
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

// TestHostTmux: HostOptions.Tmux decides which tmux a host's sessions run
// as "tmux"; the other hosts keep the tmux under test.
func TestHostTmux(t *testing.T) {
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("no OpenSSH client")
	}
	fake := filepath.Join(t.TempDir(), "tmux-fake")
	writeFile(t, fake, []byte("#!/bin/sh\necho 'tmux 9.9z'\n"), 0o755)
	e := New(t)
	plain := e.StartHost("plain", HostOptions{})
	other := e.StartHost("other", HostOptions{Tmux: fake})
	kh := filepath.Join(e.Dir, "known_hosts")
	WriteKnownHosts(t, kh, KnownHostsOptions{}, plain, other)
	cfg := filepath.Join(e.Dir, "ssh_config")
	e.WriteSSHConfig(cfg, SSHConfigOptions{KnownHostsFile: kh}, plain, other)
	want, err := tmuxtest.Command("-V").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host *Host
		want string
	}{
		{plain, strings.TrimSpace(string(want))},
		{other, "tmux 9.9z"},
	} {
		out, err := exec.Command(sshBin, "-F", cfg, tc.host.Name, "tmux", "-V").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: ssh: %v\n%s", tc.host.Name, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("%s: tmux -V = %q, want %q", tc.host.Name, got, tc.want)
		}
	}
	if other.Tmux != fake {
		t.Errorf("Host.Tmux = %q, want %q", other.Tmux, fake)
	}
}
