package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/mcp/surface"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEveryToolSurvivesBadInput calls every tool with no arguments and
// with each parameter set to values of the wrong type: every call must
// come back as a result (never a protocol error or a crash), and every
// error result must carry a message.
func TestEveryToolSurvivesBadInput(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	e := newEnv(t, withSettings(Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 1}))
	bad := []any{12345, 1.5, true, "", []any{1, "x"}, map[string]any{"x": 1}, nil, strings.Repeat("x", 5000), "#(touch " + marker + ")", "#{E:#{a:35}(touch " + marker + ")}"}
	for _, ts := range surface.Spec.Tools {
		if ts.Name == "kill_server" {
			continue
		}
		calls := []map[string]any{{}}
		for _, p := range ts.Params {
			for _, v := range bad {
				if p.Name == "socket_name" && v == "" {
					continue // "" is tmux's default socket: the user's own server
				}
				args := map[string]any{p.Name: v}
				// Fill the other required parameters so the bad value
				// reaches the tool, and keep waits short.
				for _, q := range ts.Params {
					if q.Required && q.Name != p.Name {
						args[q.Name] = "x"
					}
				}
				if ts.SelfBounded && p.Name != "timeout" {
					args["timeout"] = 0.05
				}
				calls = append(calls, args)
			}
		}
		for _, args := range calls {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			t0 := time.Now()
			res, err := e.cs.CallTool(ctx, &sdk.CallToolParams{Name: ts.Name, Arguments: args})
			cancel()
			if d := time.Since(t0); d > 300*time.Millisecond {
				t.Logf("slow: %s(%v) %v", ts.Name, args, d)
			}
			if err != nil {
				t.Fatalf("%s(%v): protocol error %v", ts.Name, args, err)
			}
			if res.IsError && strings.TrimSpace(text(res)) == "" {
				t.Errorf("%s(%v): error result without a message", ts.Name, args)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("%s(%v) ran a #( format job", ts.Name, args)
			}
			if strings.Contains(text(res), "internal error in") || strings.Contains(text(res), "panic") {
				t.Errorf("%s(%v): %s", ts.Name, args, text(res))
			}
		}
	}
	time.Sleep(time.Second) // format jobs run in the background
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a #( format job ran")
	}
	// The server still answers.
	var s []SessionInfo
	e.result("list_sessions", nil, &s)
}
