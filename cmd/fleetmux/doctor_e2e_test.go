package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// TestDoctorHosts runs `fleetmux doctor --hosts` against real sshd hosts:
// one that works, one whose key is not in known_hosts (StrictHostKeyChecking
// yes, then accept-new, which doctor must not record), one whose key
// changed, one that refuses the user's key and one where nothing listens.
func TestDoctorHosts(t *testing.T) {
	env := sshtest.New(t)
	good := env.StartHost("good-1", sshtest.HostOptions{})
	stranger := env.StartHost("stranger-1", sshtest.HostOptions{})
	changed := env.StartHost("changed-1", sshtest.HostOptions{})
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{Hashed: true}, good, changed)
	cfg := filepath.Join(dir, "ssh_config")
	env.WriteSSHConfig(cfg, sshtest.SSHConfigOptions{KnownHostsFile: kh}, good, stranger)
	newcfg := filepath.Join(dir, "ssh_config.accept-new")
	env.WriteSSHConfig(newcfg, sshtest.SSHConfigOptions{KnownHostsFile: kh, StrictHostKeyChecking: "accept-new"}, stranger)
	// changed-1 is recorded under another host's name: its key does not match.
	otherKey, _ := env.NewUserKey("unauthorized", "", false)
	dead := sshtest.FreePort(t)
	extra := fmt.Sprintf(`Host changed-1
  HostName 127.0.0.1
  Port %d
  User %[2]s
  IdentityFile %[3]s
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile %[4]s
  GlobalKnownHostsFile /dev/null
  HostKeyAlias good-1-alias
  StrictHostKeyChecking yes
  BatchMode yes

Host denied-1
  HostName 127.0.0.1
  Port %[5]d
  User %[2]s
  IdentityFile %[6]s
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile %[4]s
  GlobalKnownHostsFile /dev/null
  HostKeyAlias %[7]s
  StrictHostKeyChecking yes
  BatchMode yes

Host dead-1
  HostName 127.0.0.1
  Port %[8]d
  User %[2]s
  ConnectTimeout 5
`, changed.Port, env.User, env.UserKeyFile, kh, good.Port, otherKey, good.KnownHostsName(), dead)
	// good-1-alias is a name in known_hosts with good-1's key.
	aliasLines := good.KnownHostsLines(sshtest.KnownHostsOptions{Name: "good-1-alias"})
	f, err := os.OpenFile(kh, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Join(aliasLines, "\n") + "\n")
	f.Close()
	khBefore, _ := os.ReadFile(kh)
	data, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, append(data, []byte(extra)...), 0o600); err != nil {
		t.Fatal(err)
	}

	_, state := doctorHome(t)
	t.Setenv("TMUX", "")
	code, r := runDoctorJSON(t, "--state", state, "--ssh-config", cfg, "--hosts", "*-1")
	if code != 1 {
		t.Errorf("exit %d, want 1 (failed hosts)", code)
	}
	for _, c := range r.Checks {
		t.Logf("%s %s: %s -> %s", c.Status, c.Check, c.Detail, c.Fix)
	}
	for _, tc := range []struct {
		host, status string
		want         []string
		fix          string
	}{
		{"good-1", statusOK, []string{"resolved " + env.User + "@127.0.0.1:", "tcp ok", "host key verified", "auth ok", "tmux ", "connect ", "rtt "}, ""},
		{"stranger-1", statusFail, []string{"host key: "}, "StrictHostKeyChecking=accept-new stranger-1 true"},
		{"changed-1", statusFail, []string{"host key: "}, "different key"},
		{"denied-1", statusFail, []string{"auth: "}, "authorized on the host"},
		{"dead-1", statusFail, []string{fmt.Sprintf("tcp 127.0.0.1:%d: ", dead)}, "sshd listens on"},
	} {
		c := r.find("host " + tc.host)
		if len(c) != 1 {
			t.Errorf("%s: checks %+v", tc.host, r.Checks)
			continue
		}
		if c[0].Status != tc.status || !strings.Contains(c[0].Fix, tc.fix) {
			t.Errorf("%s: %+v, want %s with a fix containing %q", tc.host, c[0], tc.status, tc.fix)
		}
		for _, w := range tc.want {
			if !strings.Contains(c[0].Detail, w) {
				t.Errorf("%s: detail %q lacks %q", tc.host, c[0].Detail, w)
			}
		}
	}
	if c := r.find("ssh"); len(c) != 1 || c[0].Status != statusOK || !strings.Contains(c[0].Detail, "ssh -G works; 5 Host aliases") {
		t.Errorf("ssh check: %+v", c)
	}

	// accept-new: an unknown key is a warning, and doctor does not record it.
	code, r = runDoctorJSON(t, "--state", state, "--ssh-config", newcfg, "--hosts", "stranger-1")
	if c := r.find("host stranger-1"); code != 0 || len(c) != 1 || c[0].Status != statusWarn || !strings.Contains(c[0].Detail, "accept-new records it on the first connection") {
		t.Errorf("accept-new: exit %d, %+v", code, r.Checks)
	}
	if after, _ := os.ReadFile(kh); string(after) != string(khBefore) {
		t.Errorf("doctor changed known_hosts")
	}

	// A selection that matches nothing fails with a fix.
	code, r = runDoctorJSON(t, "--state", state, "--ssh-config", cfg, "--hosts", "nope-*")
	if c := r.find("hosts"); code != 1 || len(c) != 1 || c[0].Status != statusFail || !strings.Contains(c[0].Fix, "fleetmux hosts") {
		t.Errorf("no match: exit %d, %+v", code, r.Checks)
	}
}
