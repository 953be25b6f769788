package mcp

import (
	"context"
	"fmt"
	"sort"

	"github.com/fleetmux/fleetmux/fleet/vocab"
	"github.com/fleetmux/fleetmux/transport"
)

// staticBackend routes a fixed set of named runners (benchmarks, tests).
type staticBackend struct {
	runners map[string]transport.Runner
	names   []string
}

// StaticBackend serves the given hosts; fleet mode is on when any host
// other than LocalHost is present.
func StaticBackend(runners map[string]transport.Runner) Backend {
	b := &staticBackend{runners: runners}
	for h := range runners {
		b.names = append(b.names, h)
	}
	sort.Strings(b.names)
	return b
}

func (b *staticBackend) Runner(_ context.Context, host string) (transport.Runner, error) {
	r, ok := b.runners[host]
	if !ok {
		return nil, fmt.Errorf("unknown host")
	}
	return r, nil
}
func (b *staticBackend) Fleet() bool {
	for h := range b.runners {
		if h != LocalHost {
			return true
		}
	}
	return false
}
func (b *staticBackend) Match(p string) ([]string, error) {
	var out []string
	for _, h := range b.names {
		if vocab.MatchHost(p, h) {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no host matches %q", p)
	}
	return out, nil
}
func (b *staticBackend) Cap(string) (Tier, bool) { return 0, false }
func (b *staticBackend) Local(h string) bool     { return h == LocalHost }
