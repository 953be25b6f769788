package main

import (
	"context"
	"time"

	"github.com/fleetmux/fleetmux/fleet"
	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/transport"
)

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
func (b fleetBackend) Cap(h string) (mcp.Tier, bool) {
	c, ok := b.f.Cap(h)
	if !ok {
		return 0, false
	}
	t, ok := mcp.ParseTier(c)
	return t, ok
}

// HostStatuses implements HostLister.
func (b fleetBackend) HostStatuses(ctx context.Context, serverTier mcp.Tier) []mcp.HostStatus {
	var out []mcp.HostStatus
	for _, hi := range b.f.Statuses(ctx) {
		eff := serverTier
		if c, ok := mcp.ParseTier(hi.Cap); ok && hi.Cap != "" && c < eff {
			eff = c
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
