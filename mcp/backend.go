package mcp

import (
	"context"
	"fmt"

	"github.com/fleetmux/fleetmux/fleet/vocab"
	"github.com/fleetmux/fleetmux/transport"
)

type localBackend struct{ r transport.Runner }

// LocalBackend is the local-mode backend: one host, this machine (its
// tmux commands go through tmux's own client protocol when they can:
// tmux.NewExecutor decides for a transport.Local).
func LocalBackend() Backend { return &localBackend{r: transport.NewLocal()} }

func (b *localBackend) Runner(ctx context.Context, host string) (transport.Runner, error) {
	if host != LocalHost {
		return nil, fmt.Errorf("unknown host (local mode has only %q)", LocalHost)
	}
	return b.r, nil
}
func (b *localBackend) Fleet() bool { return false }
func (b *localBackend) Match(p string) ([]string, error) {
	if vocab.MatchHost(p, LocalHost) {
		return []string{LocalHost}, nil
	}
	return nil, fmt.Errorf("no selected host matches %q", p)
}
func (b *localBackend) Cap(string) (Tier, bool) { return 0, false }
func (b *localBackend) Local(h string) bool     { return h == LocalHost }
