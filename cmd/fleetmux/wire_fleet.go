package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fleetmux/fleetmux/cmd/internal/cli"
	"github.com/fleetmux/fleetmux/fleet"
	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/store"
	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/transport"
)

// openFleet switches on fleet mode when --hosts selects remote hosts:
// it returns the fleet's backend and the function that closes it (a nil
// backend and a no-op in local mode). Host state persists in st when the
// store is open.
func openFleet(g *globalFlags, st *store.Store, log *slog.Logger) (mcp.Backend, func(), error) {
	noop := func() {}
	if g.hosts == "" {
		if len(g.hostSafety) > 0 || g.noLocal {
			return nil, noop, fmt.Errorf("--host-safety and --no-local need --hosts")
		}
		return nil, noop, nil
	}
	safety, err := fleet.ParseHostSafety(g.hostSafety)
	if err != nil {
		return nil, noop, err
	}
	sel, inv, err := cli.LoadInventory(g.hosts, g.sshConfig)
	if err != nil {
		return nil, noop, err
	}
	for _, w := range inv.Warnings() {
		log.Warn(w)
	}
	selected := inv.Select(sel)
	if len(selected) == 0 {
		return nil, noop, fmt.Errorf("--hosts %q matches no Host alias in %s (see fleetmux hosts)", g.hosts, cli.SSHConfigsLookedAt(inv))
	}
	if !g.noLocal {
		selected = append(selected, fleet.LocalHost)
	}
	for _, w := range safety.Shadowed(selected) {
		log.Warn(w)
	}
	var state fleet.StateStore
	if st != nil {
		state = st
	}
	f, err := fleet.New(fleet.Options{Inventory: inv, Selection: sel, NoLocal: g.noLocal, Safety: safety, State: state, Logger: log, SSH: transport.SSHOptions{Logger: log}})
	if err != nil {
		return nil, noop, err
	}
	if g.warm {
		// Serving: dial the hosts now, in the background, so the agent's
		// first call finds warm connections. Never delays the handshake.
		f.Warm(0)
	}
	return fleetBackend{f: f}, func() { _ = f.Close() }, nil
}

// checkOneHost backs `fleetmux hosts --check`: it connects to one host,
// runs `tmux -V` and reports the connection state ("connected",
// "unreachable", ...), the remote tmux version and the command's
// round-trip time.
func checkOneHost(ctx context.Context, alias string, cfg *transport.SSHConfig) (string, string, time.Duration, error) {
	r := transport.NewSSH(cfg, transport.SSHOptions{PerCommand: true})
	defer r.Close()
	t0 := time.Now()
	v, err := tmux.ProbeVersion(ctx, r, "")
	rtt := time.Since(t0)
	var exit *tmux.VersionError
	switch {
	case errors.As(err, &exit):
		return "connected", "", rtt, err
	case err != nil:
		return string(r.Status().State), "", 0, err
	}
	return "connected", v, rtt, nil
}
