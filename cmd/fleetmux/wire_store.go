package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/store"
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

// storeAuditor adapts the store to mcp.Auditor.
type storeAuditor struct {
	st  *store.Store
	pid int
}

func (a *storeAuditor) Append(ctx context.Context, ev mcp.AuditEvent) error {
	ctx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	return a.st.Append(ctx, store.Record{
		Time: ev.Time, PID: a.pid, SessionID: ev.SessionID, MCPSessionID: ev.MCPSessionID,
		Client: ev.Client, ClientVersion: ev.ClientVersion,
		Host: ev.Host, Tool: ev.Tool, Args: ev.Args,
		Outcome: ev.Outcome, ErrorType: ev.ErrorType, Error: ev.Error,
		Duration: ev.Duration, Parent: ev.Parent,
	})
}
