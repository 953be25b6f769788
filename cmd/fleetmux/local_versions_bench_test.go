package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// BenchmarkLocalVersions measures, per tmux release (3.3a: the system's;
// 3.5a: tmuxtest.Version's build), the list_sessions and capture_pane
// tool calls of the built fleetmux binary over stdio (audit store on)
// against a bare `tmux list-sessions` exec of the same binary on the same
// private server: p50 of 200 interleaved calls each, with fleetmux on its
// native client and, for comparison, forced to exec (FLEETMUX_TMUX_EXEC=1).
// Run with -bench LocalVersions -benchtime 1x; the table goes to stderr,
// ratios against the bare exec as x-bare (target for native
// list_sessions: 0.3 or less).
func BenchmarkLocalVersions(b *testing.B) {
	for _, release := range []string{"3.3a", "3.5a"} {
		b.Run(release, func(b *testing.B) {
			var bin string
			if release == "3.3a" {
				p, err := exec.LookPath("tmux")
				out, verr := exec.Command(p, "-V").Output()
				if err != nil || verr != nil || strings.TrimSpace(string(out)) != "tmux 3.3a" {
					b.Skipf("the tmux on PATH is not 3.3a (%q)", out)
				}
				bin = p
			} else {
				bin = tmuxtest.Version(b, release)
			}
			benchLocalRelease(b, release, bin)
		})
	}
}

func benchLocalRelease(b *testing.B, release, bin string) {
	sock := fmt.Sprintf("fleetmux-test-ver-%s-%d", release, os.Getpid())
	tm := func(args ...string) *exec.Cmd { return exec.Command(bin, append([]string{"-L", sock}, args...)...) }
	if out, err := tm("-f", "/dev/null", "new-session", "-d", "-s", "ver", "-x", "120", "-y", "30").CombinedOutput(); err != nil {
		b.Fatalf("tmux: %v %s", err, out)
	}
	b.Cleanup(func() { _ = tm("kill-server").Run() })
	out, err := tm("display-message", "-p", "-t", "ver:0.0", "#{pane_id}").Output()
	if err != nil {
		b.Fatal(err)
	}
	pane := strings.TrimSpace(string(out))
	const n = 200
	ctx := context.Background()
	bare := func() time.Duration {
		t0 := time.Now()
		if err := tm("list-sessions").Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	server := func(name string, env ...string) *sdk.ClientSession {
		cmd := exec.Command(binPath, "--state", filepath.Join(b.TempDir(), "state.db"))
		cmd.Env = append(os.Environ(), append([]string{"LIBTMUX_TMUX_BIN=" + bin, "LIBTMUX_SOCKET=" + sock, "TMUX=", "TMUX_PANE="}, env...)...)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		b.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	tool := func(cs *sdk.ClientSession, name string, args map[string]any) func() time.Duration {
		return func() time.Duration {
			t0 := time.Now()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %+v", name, err, res)
			}
			return time.Since(t0)
		}
	}
	native, forced := server("native"), server("exec", "FLEETMUX_TMUX_EXEC=1")
	capture := map[string]any{"pane_id": pane}
	paths := []struct {
		name string
		call func() time.Duration
	}{
		{"bare tmux list-sessions exec", bare},
		{"list_sessions native", tool(native, "list_sessions", map[string]any{})},
		{"capture_pane native", tool(native, "capture_pane", capture)},
		{"list_sessions exec", tool(forced, "list_sessions", map[string]any{})},
		{"capture_pane exec", tool(forced, "capture_pane", capture)},
	}
	for b.Loop() {
		ds := make([][]time.Duration, len(paths))
		for range n {
			for i, p := range paths {
				ds[i] = append(ds[i], p.call())
			}
		}
		base := p50(ds[0])
		for i, p := range paths {
			m := p50(ds[i])
			fmt.Fprintf(os.Stderr, "tmux %-5s %-29s p50 %6.3f ms  x-bare %.2f\n", release, p.name, float64(m.Microseconds())/1000, float64(m)/float64(base))
		}
	}
}
