package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// BenchmarkLocalSideBySide measures, in one run on one private tmux
// server, list_sessions p50 over stdio from the built fleetmux binary
// (audit store on) against a bare `tmux list-sessions` exec and, when
// FLEETMUX_BENCH_LIBTMUX_GO names its binary (libtmux-go's mcp/cmd/
// libtmux-mcp, built from its repository), libtmux-go's MCP server.
// Run with -bench LocalSideBySide -benchtime 1x; the table goes to
// stderr, ratios against the bare exec as x-bare.
func BenchmarkLocalSideBySide(b *testing.B) {
	sock := fmt.Sprintf("fleetmux-test-side-%d", os.Getpid())
	if out, err := tmuxtest.Command("-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "side").CombinedOutput(); err != nil {
		b.Fatalf("tmux: %v %s", err, out)
	}
	b.Cleanup(func() { _ = tmuxtest.Command("-L", sock, "kill-server").Run() })
	const n = 400
	bare := func() time.Duration {
		t0 := time.Now()
		if err := tmuxtest.Command("-L", sock, "list-sessions").Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	server := func(name string, cmd *exec.Cmd) func() time.Duration {
		cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET="+sock, "TMUX=", "TMUX_PANE=")
		ctx := context.Background()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		b.Cleanup(func() { _ = cs.Close() })
		return func() time.Duration {
			t0 := time.Now()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				b.Fatalf("%s list_sessions: %v %+v", name, err, res)
			}
			return time.Since(t0)
		}
	}
	paths := []struct {
		name string
		call func() time.Duration
	}{
		{"bare tmux exec", bare},
		{"fleetmux", server("fleetmux", exec.Command(binPath, "--state", filepath.Join(b.TempDir(), "state.db")))},
	}
	if bin := os.Getenv("FLEETMUX_BENCH_LIBTMUX_GO"); bin != "" {
		paths = append(paths, struct {
			name string
			call func() time.Duration
		}{"libtmux-go mcp", server("libtmux-go", exec.Command(bin))})
	}
	for b.Loop() {
		// Interleaved, so a noisy moment hits every path alike.
		ds := make([][]time.Duration, len(paths))
		for range n {
			for i, p := range paths {
				ds[i] = append(ds[i], p.call())
			}
		}
		base := p50(ds[0])
		for i, p := range paths {
			m := p50(ds[i])
			fmt.Fprintf(os.Stderr, "%-16s list_sessions p50 %6.3f ms  x-bare %.2f\n", p.name, ms(m), float64(m)/float64(base))
		}
	}
}
