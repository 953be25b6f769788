package mcp

import (
	"context"
	"time"

	"github.com/fleetmux/fleetmux/fleet"
	"github.com/fleetmux/fleetmux/transport"
)

// fleetBackend serves fleet mode from a *fleet.Fleet.
type fleetBackend struct{ f *fleet.Fleet }

// FleetBackend adapts a fleet to the MCP server. With no remote host
// selected it behaves exactly like LocalBackend (local mode surface).
func FleetBackend(f *fleet.Fleet) Backend { return &fleetBackend{f: f} }

func (b *fleetBackend) Runner(ctx context.Context, host string) (transport.Runner, error) {
	return b.f.Runner(ctx, host)
}
func (b *fleetBackend) Fleet() bool                      { return b.f.Remote() }
func (b *fleetBackend) Match(p string) ([]string, error) { return b.f.Match(p) }
func (b *fleetBackend) Local(h string) bool              { return b.f.IsLocal(h) }
func (b *fleetBackend) Cap(h string) (Tier, bool) {
	c, ok := b.f.Cap(h)
	if !ok {
		return 0, false
	}
	t, ok := ParseTier(c)
	return t, ok
}

// HostStatuses implements HostLister.
func (b *fleetBackend) HostStatuses(ctx context.Context, serverTier Tier) []HostStatus {
	var out []HostStatus
	for _, hi := range b.f.Statuses(ctx) {
		eff := serverTier
		if c, ok := ParseTier(hi.Cap); ok && hi.Cap != "" && c < eff {
			eff = c
		}
		hs := HostStatus{Host: hi.Host, Safety: eff.String(), State: hi.State}
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
