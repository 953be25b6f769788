package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/fleet"
	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// TestFleetWarm: Warm dials the selected hosts in the background, so the
// first call finds a connection; a hung host is only recorded; Close ends
// the warm-up at once.
func TestFleetWarm(t *testing.T) {
	env := sshtest.New(t)
	h1 := env.StartHost("warm-1", sshtest.HostOptions{})
	h2 := env.StartHost("warm-2", sshtest.HostOptions{})
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	sshtest.WriteKnownHosts(t, kh, sshtest.KnownHostsOptions{}, h1, h2)
	cfg := filepath.Join(dir, "ssh_config")
	env.WriteSSHConfig(cfg, sshtest.SSHConfigOptions{KnownHostsFile: kh, Extra: []string{"ConnectTimeout 2"}}, h1, h2)
	hung := sshtest.HungHost(t)
	host, port, _ := strings.Cut(hung, ":")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "Host warm-hung\n  HostName %s\n  Port %s\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile %s\n  ConnectTimeout 2\n", host, port, env.User, env.UserKeyFile, kh)
	f.Close()

	inv, err := fleet.LoadInventory(fleet.InventoryOptions{UserConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := fleet.ParseSelection("warm-*")
	fl, err := fleet.New(fleet.Options{Inventory: inv, Selection: sel, NoLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	start := time.Now()
	fl.Warm(0)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Warm blocked for %s", d)
	}
	state := func(h string) string {
		for _, hi := range fl.Statuses(context.Background()) {
			if hi.Host == h {
				return hi.State
			}
		}
		return ""
	}
	deadline := time.Now().Add(30 * time.Second)
	for (state("warm-1") != "connected" || state("warm-2") != "connected" || state("warm-hung") != "unreachable") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for h, want := range map[string]string{"warm-1": "connected", "warm-2": "connected", "warm-hung": "unreachable"} {
		if got := state(h); got != want {
			t.Errorf("%s: state %q after warm-up, want %q", h, got, want)
		}
	}
	r, err := fl.Runner(context.Background(), "warm-1")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := r.Run(context.Background(), []string{"true"}, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("first call after warm-up: %s", time.Since(t0).Round(time.Microsecond))

	// Close while a warm-up is dialling a hung host does not wait for it.
	fl2, _ := fleet.New(fleet.Options{Inventory: inv, Selection: sel, NoLocal: true})
	fl2.Warm(0)
	time.Sleep(100 * time.Millisecond)
	t0 = time.Now()
	fl2.Close()
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Close waited %s for the warm-up", d)
	}
}
