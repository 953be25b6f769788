package mcp

import (
	"context"
	"fmt"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// BenchmarkBareListSessions is the baseline: one tmux list-sessions exec.
func BenchmarkBareListSessions(b *testing.B) {
	e := newBenchEnv(b)
	for b.Loop() {
		if err := tmuxtest.Command("-L", e.socket, "list-sessions").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMCPListSessions is list_sessions through the whole MCP layer
// (in-memory transport, validation, pipeline, audit hook, encoding).
func BenchmarkMCPListSessions(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	for b.Loop() {
		res, err := e.cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

func newBenchEnv(b *testing.B) *testEnv {
	t := &testing.T{}
	_ = t
	e := &testEnv{vars: map[string]string{}}
	e.socket = "fleetmux-test-bench-" + b.Name()
	if out, err := tmuxtest.Command("-L", e.socket, "-f", "/dev/null", "new-session", "-d", "-s", "fixture").CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	b.Cleanup(func() { _ = tmuxtest.Command("-L", e.socket, "kill-server").Run() })
	e.vars["LIBTMUX_SOCKET"] = e.socket
	srv, err := New(Options{Settings: Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 30}, Getenv: e.getenv})
	if err != nil {
		b.Fatal(err)
	}
	cs, closer, err := srv.InProcess(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(closer)
	e.cs = cs
	return e
}

// BenchmarkMCPOverhead is one call that never reaches tmux (argument
// validation fails): the cost of the MCP layer itself.
func BenchmarkMCPOverhead(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := e.cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_pane_info", Arguments: map[string]any{"pane_id": 1}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGroupedText reports the size of a fan-out action's text for
// 50 hosts with identical outcomes (grouped-bytes) against the 50
// results one call per host would return (separate-bytes).
func BenchmarkGroupedText(b *testing.B) {
	status := 0
	outs := make([]HostOutcome, 50)
	separate := 0
	for i := range outs {
		r := RunCommandResult{PaneID: fmt.Sprintf("%%%d", i), ExitStatus: &status, TailedOutput: TailedOutput{Output: []string{"Already up to date.", "ok   github.com/x/y 0.4s", "PASS"}}, ElapsedSeconds: 1.234, EffectiveTimeout: 60}
		outs[i] = HostOutcome{Host: fmt.Sprintf("dev-%02d", i+1), Outcome: surface.OutcomeOK, Result: r}
		separate += len(pyfmt.Compact(r))
	}
	var text string
	for b.Loop() {
		text = groupedText("run_command", outs, FanoutSummary{Hosts: 50, OK: 50})
	}
	b.ReportMetric(float64(len(text)), "grouped-bytes")
	b.ReportMetric(float64(separate), "separate-bytes")
}
