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
	alias := "  HostKeyAlias " + h.KnownHostsName() + "\n"
	cfg := block("fast", strconv.Itoa(h.Port), "") + block("slow", proxyPort, alias) +
		block("fast2", strconv.Itoa(h.Port), alias) + block("fast3", strconv.Itoa(h.Port), alias) +
		block("slow2", proxyPort, alias) + block("slow3", proxyPort, alias)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	cs := benchFleetClient(b, cfgPath, "fast*,slow*", mcp.TierDestructive)
	call := func(host any, tool string, args map[string]any) (*sdk.CallToolResult, time.Duration) {
		a := map[string]any{"host": host}
		for k, v := range args {
			a[k] = v
		}
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: a})
		d := time.Since(t0)
		if err != nil || res.IsError {
			text := ""
			if res != nil && len(res.Content) > 0 {
				if tc, ok := res.Content[0].(*sdk.TextContent); ok {
					text = tc.Text
				}
			}
			b.Fatalf("%s on %v: %v %s", tool, host, err, text)
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
	for _, h := range []string{"slow", "fast2", "fast3", "slow2", "slow3"} {
		call(h, "list_sessions", nil) // connect every alias
	}
	// A pane that rewrites its line every 10 ms (no history grows):
	// wait_for_text for any output returns at its first poll.
	res, _ = call("fast", "create_window", map[string]any{"session_name": "rt", "window_name": "ticker"})
	var win struct {
		ActivePaneID string `json:"active_pane_id"`
	}
	raw, _ = json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &win)
	call("fast", "send_keys", map[string]any{"pane_id": win.ActivePaneID, "keys": "while :; do printf '\\rtick %s ' $RANDOM; sleep 0.01; done"})
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
		{"set_pane_title", map[string]any{"pane_id": pane, "title": "t"}, ""},
		{"select_pane", map[string]any{"pane_id": pane}, ""},
		{"resize_pane", map[string]any{"pane_id": pane, "zoom": false}, ""},
		{"paste_text", map[string]any{"pane_id": pane, "text": "x", "bracket": false}, ""},
		{"capture_since", map[string]any{"pane_id": pane}, ""},
		{"list_windows", map[string]any{"session_name": "rt"}, ""},
		{"rename_session", map[string]any{"session_name": "rt", "new_name": "rt"}, ""},
		{"wait_for_text", map[string]any{"pane_id": "TICKER", "timeout": 5}, "wait (output)"},
	}
	const n = 15
	report := func(label string, fast, slow []time.Duration) {
		pf, ps := p50(fast), p50(slow)
		rt := float64(ps-pf) / float64(rtt)
		b.ReportMetric(rt, "rt-"+strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(label))
		fmt.Fprintf(os.Stderr, "%-16s fast p50 %6.2f ms  slow p50 %7.2f ms  round trips %.2f\n", label, ms(pf), ms(ps), rt)
	}
	for b.Loop() {
		for _, tl := range tools {
			var fast, slow []time.Duration
			args := tl.args
			if args["pane_id"] == "TICKER" {
				args = map[string]any{"pane_id": win.ActivePaneID, "timeout": 5}
			}
			for range n {
				_, d := call("fast", tl.name, args)
				fast = append(fast, d)
				_, d = call("slow", tl.name, args)
				slow = append(slow, d)
			}
			label := tl.label
			if label == "" {
				label = tl.name
			}
			report(label, fast, slow)
		}
		// create_window then kill_window of the window it made.
		var cf, cs2, kf, ks []time.Duration
		for range n {
			for _, host := range []string{"fast", "slow"} {
				res, d := call(host, "create_window", map[string]any{"session_name": "rt"})
				var w struct {
					WindowID string `json:"window_id"`
				}
				raw, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(raw, &w)
				_, d2 := call(host, "kill_window", map[string]any{"window_id": w.WindowID})
				if host == "fast" {
					cf, kf = append(cf, d), append(kf, d2)
				} else {
					cs2, ks = append(cs2, d), append(ks, d2)
				}
			}
		}
		report("create_window", cf, cs2)
		report("kill_window", kf, ks)
		// Fan-out: list_sessions on three aliases at once.
		var ff, fs []time.Duration
		for range n {
			_, d := call("fast*", "list_sessions", nil)
			ff = append(ff, d)
			_, d = call("slow*", "list_sessions", nil)
			fs = append(fs, d)
		}
		report("fan-out x3", ff, fs)
		// wait_for_text reacting: the pane prints a line stamped with the
		// time it printed it (same clock: sshd is on this machine); the
		// figure is how long after that the call returned.
		var lf, ls []time.Duration
		call("fast", "send_keys", map[string]any{"pane_id": pane, "keys": "C-u", "enter": false}) // what paste_text typed
		for i := range n {
			for _, host := range []string{"fast", "slow"} {
				tag := fmt.Sprintf("%d", 1000+i)
				call(host, "send_keys", map[string]any{"pane_id": pane, "keys": "sleep 0.2; echo T$(date +%s%N) DONE$((" + tag + "+0))"})
				res, _ := call(host, "wait_for_text", map[string]any{"pane_id": pane, "patterns": []any{"^T[0-9]+ DONE" + tag + "$"}, "regex": true, "timeout": 5})
				returned := time.Now()
				var w struct {
					MatchedLines []string `json:"matched_lines"`
				}
				raw, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(raw, &w)
				if len(w.MatchedLines) == 0 {
					b.Fatalf("wait_for_text on %s matched nothing: %+v", host, res.StructuredContent)
				}
				stamp, err := strconv.ParseInt(strings.TrimPrefix(strings.Fields(w.MatchedLines[0])[0], "T"), 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				d := returned.Sub(time.Unix(0, stamp))
				if host == "fast" {
					lf = append(lf, d)
				} else {
					ls = append(ls, d)
				}
			}
		}
		report("wait (react)", lf, ls)
	}
}
