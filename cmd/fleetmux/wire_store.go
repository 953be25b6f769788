package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/store"
)

func init() {
	subcommands["audit"] = runAudit
}

// statePath is --state, FLEETMUX_STATE (already the flag default) or the
// XDG default.
func statePath(g *globalFlags) (string, error) {
	if g.state != "" {
		return g.state, nil
	}
	return store.DefaultPath()
}

// wireStore opens the audit store. A store that cannot be opened never
// stops fleetmux from serving: the error is logged and calls go on
// without persisted records.
func wireStore(ctx context.Context, g *globalFlags, o *mcp.Options, log *slog.Logger, cleanup *func()) error {
	o.Redact = store.Redact
	if g.noAudit {
		return nil
	}
	retention, ok, err := parseAgo(g.retention)
	if err != nil || !ok {
		return fmt.Errorf("--audit-retention %q: want a duration such as 90d or 72h", g.retention)
	}
	path, err := statePath(g)
	if err != nil {
		log.Error("audit unavailable: no state path", "error", err)
		return nil
	}
	st, err := store.OpenContext(ctx, path, store.Options{})
	if err != nil {
		log.Error("audit unavailable; serving tools without persisted records", "error", err)
		return nil
	}
	o.Auditor = &storeAuditor{st: st, pid: os.Getpid()}
	o.State = st
	// Retention runs once in the background; cleanup waits for it.
	var wg sync.WaitGroup
	pctx, cancel := context.WithCancel(context.Background())
	wg.Add(1)
	go func() {
		defer wg.Done()
		if n, err := st.Prune(pctx, retention, 256<<20); err != nil {
			log.Debug("audit retention", "error", err)
		} else if n > 0 {
			log.Info("audit retention removed old records", "count", n)
		}
	}()
	prev := *cleanup
	*cleanup = func() {
		cancel()
		wg.Wait()
		prev()
	}
	return nil
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
		Time: ev.Time, PID: a.pid, SessionID: ev.SessionID,
		Client: ev.Client, ClientVersion: ev.ClientVersion,
		Host: ev.Host, Tool: ev.Tool, Args: ev.Args,
		Outcome: ev.Outcome, ErrorType: ev.ErrorType, Error: ev.Error,
		Duration: ev.Duration, Parent: ev.Parent,
	})
}
