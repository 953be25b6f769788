package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// TestHostsCheck runs `fleetmux hosts --json --check` against a real sshd
// and a host whose key is not in known_hosts.
func TestHostsCheck(t *testing.T) {
	env := sshtest.New(t)
	good := env.StartHost("good-1", sshtest.HostOptions{})
	stranger := env.StartHost("stranger-1", sshtest.HostOptions{})
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{Hashed: true}, good)
	cfg := filepath.Join(dir, "ssh_config")
	env.WriteSSHConfig(cfg, sshtest.SSHConfigOptions{KnownHostsFile: kh}, good, stranger)
	cmd := exec.Command(binPath, "hosts", "--ssh-config", cfg, "--hosts", "*-1", "--json", "--check")
	cmd.Env = append(os.Environ(), "TMUX=", "TMUX_PANE=")
	out, _ := cmd.Output() // exit 1: stranger-1 fails the check
	var hosts []map[string]any
	if err := json.Unmarshal(out, &hosts); err != nil {
		t.Fatalf("hosts --json: %v\n%s", err, out)
	}
	byAlias := map[string]map[string]any{}
	for _, h := range hosts {
		byAlias[h["alias"].(string)] = h
	}
	g := byAlias["good-1"]
	if g == nil || g["selected"] != true {
		t.Fatalf("good-1: %v", g)
	}
	res, _ := g["resolved"].(map[string]any)
	if res["hostname"] != "127.0.0.1" || res["port"] == nil {
		t.Fatalf("resolved: %v", res)
	}
	all, _ := json.Marshal(hosts)
	if !strings.Contains(string(all), "stranger-1") || !strings.Contains(strings.ToLower(string(all)), "unknown") {
		t.Fatalf("the unknown host key of stranger-1 is not reported: %s", all)
	}
}
