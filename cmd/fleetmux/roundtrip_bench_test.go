package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// BenchmarkRoundTrips measures what a tool call costs over a link with
// real delay, in round trips: the same host is reached directly ("fast")
// and through a proxy that delays each direction by RTT/2 ("slow"), and
// (p50 slow − p50 fast) / RTT is reported per tool as rt-TOOL.
// FLEETMUX_BENCH_RTT_MS sets the RTT (default 40). Run with
// -bench RoundTrips -benchtime 1x.
func BenchmarkRoundTrips(b *testing.B) {
	rtt := 40 * time.Millisecond
	if ms, err := strconv.Atoi(os.Getenv("FLEETMUX_BENCH_RTT_MS")); err == nil && ms > 0 {
		rtt = time.Duration(ms) * time.Millisecond
	}
	env := sshtest.New(b)
	h := env.StartHost("rt", sshtest.HostOptions{})
	dir := b.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	sshtest.WriteKnownHosts(b, kh, sshtest.KnownHostsOptions{}, h)
	_, proxyPort, _ := net.SplitHostPort(sshtest.DelayProxy(b, h.Addr, rtt/2))
	block := func(alias, port, extra string) string {
		return fmt.Sprintf("Host %s\n  HostName 127.0.0.1\n  Port %s\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  IdentityAgent none\n"+
			"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n%s\n",
			alias, port, env.User, env.UserKeyFile, kh, extra)
	}
	cfgPath := filepath.Join(dir, "ssh_config")
	cfg := block("fast", strconv.Itoa(h.Port), "") + block("slow", proxyPort, "  HostKeyAlias "+h.KnownHostsName()+"\n")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	cs := benchFleetClient(b, cfgPath, "fast,slow", mcp.TierDestructive)
	call := func(host, tool string, args map[string]any) (*sdk.CallToolResult, time.Duration) {
		a := map[string]any{"host": host}
		for k, v := range args {
			a[k] = v
		}
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: a})
		d := time.Since(t0)
		if err != nil || res.IsError {
			b.Fatalf("%s on %s: %v %+v", tool, host, err, res)
		}
		return res, d
	}
	res, _ := call("fast", "create_session", map[string]any{"session_name": "rt"})
	var sess struct {
		ActivePaneID string `json:"active_pane_id"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &sess)
	pane := sess.ActivePaneID
	call("slow", "list_sessions", nil) // connect both
	tools := []struct {
		name  string
		args  map[string]any
		label string
	}{
		{"list_sessions", nil, ""},
		{"capture_pane", map[string]any{"pane_id": pane}, ""},
		{"get_pane_info", map[string]any{"pane_id": pane}, ""},
		{"send_keys", map[string]any{"pane_id": pane, "keys": "x", "enter": false}, ""},
		{"list_panes", map[string]any{"session_name": "rt"}, ""},
		{"display_message", map[string]any{"pane_id": pane, "format_string": "#{pane_id}"}, ""},
		{"snapshot_pane", map[string]any{"pane_id": pane}, ""},
		{"search_panes", map[string]any{"pattern": "no-such-text-anywhere"}, "search (none)"},
		{"search_panes", map[string]any{"pattern": "xxx"}, "search (match)"},
		{"search_panes", map[string]any{"pattern": "x+", "regex": true}, "search (regex)"},
		{"run_command", map[string]any{"pane_id": pane, "command": "true"}, ""},
	}
	const n = 15
	for b.Loop() {
		for _, tl := range tools {
			var fast, slow []time.Duration
			for range n {
				_, d := call("fast", tl.name, tl.args)
				fast = append(fast, d)
				_, d = call("slow", tl.name, tl.args)
				slow = append(slow, d)
			}
			pf, ps := p50(fast), p50(slow)
			rt := float64(ps-pf) / float64(rtt)
			label := tl.label
			if label == "" {
				label = tl.name
			}
			b.ReportMetric(rt, "rt-"+strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(label))
			fmt.Fprintf(os.Stderr, "%-16s fast p50 %6.2f ms  slow p50 %7.2f ms  round trips %.2f\n", label, ms(pf), ms(ps), rt)
		}
	}
}
