package main

// The wiring of a server: the state file (audit records through the
// journal, jobs, retention) and the fleet (ssh_config inventory, hosts,
// their runners), adapted to the interfaces package mcp asks for.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fleetmux/fleetmux/cmd/internal/cli"
	"github.com/fleetmux/fleetmux/fleet"
	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/store"
	"github.com/fleetmux/fleetmux/transport"
)

// statePath is --state, FLEETMUX_STATE (already the flag default) or the
// XDG default.
func statePath(g *globalFlags) (string, error) {
	if g.state != "" {
		return g.state, nil
	}
	return store.DefaultPath()
}

// auditSizeCap bounds the audit data kept in the state file.
const auditSizeCap = 256 << 20

// storeLockTimeout bounds each wait for the state file's lock; tests
// shorten it.
var storeLockTimeout = store.DefaultLockTimeout

// retentionInterval is how often a long-running server applies retention
// again after the pass at start-up.
const retentionInterval = time.Hour

// openStore opens the audit store and starts retention in the
// background (at start-up, then hourly); stop ends retention and waits
// for it. A store that cannot be opened never stops fleetmux from
// serving: the error is logged, the store is nil and calls go on without
// persisted records. A file that is only locked for now is not given up
// on: each call's record waits for the lock again (bounded).
func openStore(ctx context.Context, g *globalFlags, log *slog.Logger) (st *store.Store, stop func()) {
	stop = func() {}
	if g.noAudit {
		return nil, stop
	}
	path, err := statePath(g)
	if err != nil {
		log.Error("audit unavailable: no state path (use --state or FLEETMUX_STATE)", "error", err)
		return nil, stop
	}
	sopts := store.Options{LockTimeout: storeLockTimeout}
	st, err = store.OpenContext(ctx, path, sopts)
	if errors.Is(err, store.ErrLocked) {
		log.Warn("state file busy at start-up; records will be written once the lock is free", "error", err)
		st, err = store.Handle(path, sopts)
	}
	if err != nil {
		log.Error("audit unavailable; serving tools without persisted records", "error", err)
		return nil, stop
	}
	var wg sync.WaitGroup
	pctx, cancel := context.WithCancel(context.Background())
	wg.Go(func() {
		ticker := time.NewTicker(retentionInterval)
		defer ticker.Stop()
		for {
			if n, err := st.Prune(pctx, g.retention.d, auditSizeCap); err != nil {
				if pctx.Err() == nil {
					log.Debug("audit retention", "error", err)
				}
			} else if n > 0 {
				log.Info("audit retention removed old records", "count", n)
			}
			select {
			case <-pctx.Done():
				return
			case <-ticker.C:
			}
		}
	})
	return st, func() {
		cancel()
		wg.Wait()
	}
}

// openJournal folds in the journals of writers that were killed, then
// starts this process's journal (store.Journal), through which each call's
// record reaches the disk before its answer without waiting for a bbolt
// commit. Without a journal (it could not be created) records go to the
// state file directly. closeJournal folds what is left, bounded.
func openJournal(ctx context.Context, st *store.Store, log *slog.Logger) (j *store.Journal, closeJournal func()) {
	if n, err := st.ReplayJournals(ctx); err != nil {
		log.Warn("audit: journals left by earlier runs not folded yet", "error", err)
	} else if n > 0 {
		log.Info("audit: folded records left by an earlier run", "count", n)
	}
	var warn sync.Once
	j, err := st.OpenJournal(func(err error) {
		warn.Do(func() { log.Warn("audit: records wait in the journal; the state file is busy", "error", err) })
	})
	if err != nil {
		log.Warn("audit: no journal; each record is committed before its call's answer", "error", err)
		return nil, func() {}
	}
	return j, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = j.Close(cctx)
	}
}

// storeAuditor adapts the store to mcp.Auditor: through the journal when
// there is one, else straight to the state file.
type storeAuditor struct {
	st  *store.Store
	j   *store.Journal
	pid int
}

func (a *storeAuditor) Append(ctx context.Context, ev mcp.AuditEvent) error {
	ctx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	appendRec := a.st.Append
	if a.j != nil {
		appendRec = a.j.Append
	}
	ev.PID = a.pid
	return appendRec(ctx, ev)
}

// storeJobs adapts the store to mcp.JobStore.
type storeJobs struct{ st *store.Store }

// jobOpTimeout bounds one job operation on the state file (its lock wait
// included).
const jobOpTimeout = 6 * time.Second

func (s storeJobs) PutJob(ctx context.Context, j mcp.Job) error {
	ctx, cancel := context.WithTimeout(ctx, jobOpTimeout)
	defer cancel()
	return s.st.PutJob(ctx, j)
}

func (s storeJobs) GetJob(ctx context.Context, id string) (mcp.Job, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, jobOpTimeout)
	defer cancel()
	return s.st.Job(ctx, id)
}

func (s storeJobs) ListJobs(ctx context.Context, since time.Time) ([]mcp.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, jobOpTimeout)
	defer cancel()
	return s.st.Jobs(ctx, store.JobQuery{Since: since})
}

func (s storeJobs) UpdateJob(ctx context.Context, id string, fn func(j *mcp.Job) bool) (mcp.Job, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, jobOpTimeout)
	defer cancel()
	return s.st.UpdateJob(ctx, id, fn)
}

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

// fleetBackend adapts a *fleet.Fleet to mcp.Backend and mcp.HostLister.
// With no remote host selected it behaves exactly like
// mcp.LocalBackend (local mode surface).
type fleetBackend struct{ f *fleet.Fleet }

func (b fleetBackend) Runner(ctx context.Context, host string) (transport.Runner, error) {
	return b.f.Runner(ctx, host)
}
func (b fleetBackend) Fleet() bool                      { return b.f.Remote() }
func (b fleetBackend) Match(p string) ([]string, error) { return b.f.Match(p) }
func (b fleetBackend) Local(h string) bool              { return b.f.IsLocal(h) }
func (b fleetBackend) Cap(h string) (mcp.Tier, bool)    { return b.f.Cap(h) }

// HostStatuses implements HostLister.
func (b fleetBackend) HostStatuses(ctx context.Context, serverTier mcp.Tier) []mcp.HostStatus {
	var out []mcp.HostStatus
	for _, hi := range b.f.Statuses(ctx) {
		eff := serverTier
		if hi.Capped && hi.Cap < eff {
			eff = hi.Cap
		}
		hs := mcp.HostStatus{Host: hi.Host, Safety: eff.String(), State: hi.State}
		if hi.HostName != "" {
			hs.HostName = &hi.HostName
		}
		if hi.Port != 0 {
			p := hi.Port
			hs.Port = &p
		}
		if hi.User != "" {
			hs.User = &hi.User
		}
		if hi.TmuxVersion != "" {
			hs.TmuxVersion = &hi.TmuxVersion
		}
		if hi.LastError != "" {
			hs.LastError = &hi.LastError
		}
		if !hi.LastErrorAt.IsZero() {
			s := hi.LastErrorAt.UTC().Format(time.RFC3339)
			hs.LastErrorAt = &s
		}
		if !hi.LastConnect.IsZero() {
			s := hi.LastConnect.UTC().Format(time.RFC3339)
			hs.LastConnect = &s
		}
		if hi.RTT > 0 {
			ms := float64(hi.RTT.Microseconds()) / 1000
			hs.RTTMillis = &ms
		}
		out = append(out, hs)
	}
	return out
}
