// Package bench is `fleetmux bench`: tool-call latency (p50/p90) through
// the full MCP layer on each path to tmux (local, per-command SSH, SSH
// command channels, OpenSSH ControlMaster, fan-out), with each figure's
// ratio to local and its cost in round trips over the link.
package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/cmd/internal/cli"
	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/transport"
)

const benchUsage = `Usage: fleetmux bench [--hosts PATTERNS] [--host H] [--n N] [--json]

Measures tool-call latency (p50/p90) through the full MCP layer for
list_sessions, capture_pane and send_keys on each path, and for the
per-tool view (get_pane_info, list_panes, display_message, snapshot_pane,
search_panes, create_window, kill_window) on the local and ssh-channel
paths:

  local         tmux on this machine (always measured)
  ssh-command   the remote host, a new SSH session per command
  ssh-channel   the remote host, fleetmux's long-lived command channels
                (with the cost of the first call, cold-first-call)
  openssh-cm    the remote host via the ssh client with ControlMaster
                (when an OpenSSH client is installed)
  fanout        list_sessions with host "*" over every selected host
                (when --hosts selects more than one)

Each figure is also given as a ratio to the local figure of the same run
(column xLOCAL). On a remote host the link's round trip is measured too
(SSH keepalive, row "round-trip") and each call's cost over the link is
given in round trips, (p50 - local p50) / round trip (column RTs, for
fleetmux's own paths ssh-channel and fanout, when the round trip is 5 ms
or more): one means the call took a single trip to the host. A private tmux socket (fleetmux-bench-PID) is used on every
host and its server killed afterwards; your own tmux sessions are untouched.
Nothing is written to the audit log.

Flags:
  --hosts PATTERNS
      remote hosts to measure: comma-separated globs over ssh_config Host
      aliases, "!pat" excludes (env FLEETMUX_HOSTS); without it only the
      local path is measured
  --ssh-config FILE
      ssh_config to read hosts from (default ~/.ssh/config; env
      FLEETMUX_SSH_CONFIG)
  --host H
      the host for the per-host paths (default: the first selected host)
  --n N
      measured calls per tool and path, after 3 warm-up calls (default 50)
  --json
      print the rows as a JSON array instead of a table

Exit status: 0 on success, 1 when a path failed, 2 on bad usage.
`

type benchRow struct {
	Path  string  `json:"path"`
	Tool  string  `json:"tool"`
	Host  string  `json:"host,omitempty"`
	N     int     `json:"n"`
	P50ms float64 `json:"p50_ms"`
	P90ms float64 `json:"p90_ms"`
	Ratio float64 `json:"ratio_to_local_p50"`
	// RoundTrips is (p50 − local p50) / the link's round-trip time, on
	// the paths of a remote host: what the call costs over the link.
	RoundTrips float64 `json:"round_trips,omitempty"`
}

// Run is `fleetmux bench`.
func Run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleetmux bench", flag.ContinueOnError)
	hosts := fs.String("hosts", os.Getenv("FLEETMUX_HOSTS"), "remote hosts to measure (globs over ssh_config aliases)")
	sshConfig := fs.String("ssh-config", os.Getenv("FLEETMUX_SSH_CONFIG"), "ssh_config file")
	host := fs.String("host", "", "host for the per-host paths (default: the first selected host)")
	n := fs.Int("n", 50, "calls per tool and path")
	asJSON := fs.Bool("json", false, "print JSON")
	if rc := cli.ParseFlags(fs, args, benchUsage, stdout, stderr); rc >= 0 {
		return rc
	}
	if *n < 1 {
		fmt.Fprintln(stderr, "fleetmux bench: --n must be at least 1")
		return 2
	}
	socket := fmt.Sprintf("fleetmux-bench-%d", os.Getpid())
	ctx := context.Background()
	paths := []benchPath{{name: "local", host: mcp.LocalHost, backend: mcp.StaticBackend(map[string]transport.Runner{mcp.LocalHost: transport.NewLocal()}), allTools: true}}
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	if *hosts != "" {
		sel, inv, err := cli.LoadInventory(*hosts, *sshConfig)
		if err != nil {
			fmt.Fprintf(stderr, "fleetmux bench: %v\n", err)
			return cli.ExitStatus(err)
		}
		selected := inv.Select(sel)
		if len(selected) == 0 {
			fmt.Fprintf(stderr, "fleetmux bench: --hosts %q matches no host\n", *hosts)
			return 1
		}
		target := selected[0]
		if *host != "" {
			target = *host
		}
		cfgs := map[string]*transport.SSHConfig{}
		for _, h := range selected {
			res, err := inv.Resolve(ctx, h)
			if err != nil {
				fmt.Fprintf(stderr, "fleetmux bench: %s: %v\n", h, err)
				return 1
			}
			cfg, err := res.SSHConfigContext(ctx, inv)
			if err != nil {
				fmt.Fprintf(stderr, "fleetmux bench: %s: %v\n", h, err)
				return 1
			}
			cfgs[h] = cfg
		}
		if cfgs[target] == nil {
			fmt.Fprintf(stderr, "fleetmux bench: --host %q is not selected\n", target)
			return 2
		}
		perCmd := transport.NewSSH(cfgs[target], transport.SSHOptions{PerCommand: true})
		channel := transport.NewSSH(cfgs[target], transport.SSHOptions{})
		closers = append(closers, func() { perCmd.Close() }, func() { channel.Close() })
		paths = append(paths,
			benchPath{name: "ssh-command", host: target, backend: mcp.StaticBackend(map[string]transport.Runner{target: perCmd})},
			benchPath{name: "ssh-channel", host: target, backend: mcp.StaticBackend(map[string]transport.Runner{target: channel}), cold: true, ping: channel, allTools: true},
		)
		if _, err := exec.LookPath("ssh"); err == nil {
			dir, err := os.MkdirTemp("", "fleetmux-bench")
			if err == nil {
				osh := transport.NewOpenSSH(target, *sshConfig, filepath.Join(dir, "cm"))
				closers = append(closers, func() { osh.Close(); os.RemoveAll(dir) })
				paths = append(paths, benchPath{name: "openssh-cm", host: target, backend: mcp.StaticBackend(map[string]transport.Runner{target: osh})})
			}
		}
		if len(selected) > 1 {
			runners := map[string]transport.Runner{}
			for _, h := range selected {
				r := transport.NewSSH(cfgs[h], transport.SSHOptions{})
				closers = append(closers, func() { r.Close() })
				runners[h] = r
			}
			paths = append(paths, benchPath{name: "fanout", host: "*", backend: mcp.StaticBackend(runners), fanout: selected})
		}
	}
	var rows []benchRow
	local := map[string]float64{}
	rtt := 0.0
	for _, p := range paths {
		if p.ping != nil && rtt == 0 {
			var pings []time.Duration
			for range 20 {
				d, err := p.ping.Ping(ctx)
				if err != nil {
					fmt.Fprintf(stderr, "fleetmux bench: %s: %v\n", p.name, err)
					return 1
				}
				pings = append(pings, d)
			}
			sort.Slice(pings, func(a, b int) bool { return pings[a] < pings[b] })
			rtt = ms(pings[len(pings)/2])
			rows = append(rows, benchRow{Path: "ssh", Tool: "round-trip", Host: p.host, N: len(pings), P50ms: rtt, P90ms: ms(pings[len(pings)*9/10])})
		}
		prs, err := p.measure(ctx, socket, *n)
		if err != nil {
			fmt.Fprintf(stderr, "fleetmux bench: %s: %v\n", p.name, err)
			return 1
		}
		for _, r := range prs {
			if p.name == "local" {
				local[r.Tool] = r.P50ms
			}
			base := local[r.Tool]
			if r.Tool == "cold-first-call" || r.Tool == "list_sessions(*)" {
				base = local["list_sessions"]
			}
			if base > 0 {
				r.Ratio = r.P50ms / base
			}
			if (p.name == "ssh-channel" || p.name == "fanout") && rtt >= minRTTForRoundTrips && r.Tool != "cold-first-call" {
				r.RoundTrips = max(r.P50ms-base, 0) / rtt
			}
			rows = append(rows, r)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rows)
		return 0
	}
	fmt.Fprintf(stdout, "%-12s %-18s %-12s %5s %9s %9s %8s %6s\n", "PATH", "TOOL", "HOST", "N", "P50 ms", "P90 ms", "xLOCAL", "RTs")
	for _, r := range rows {
		rts := ""
		if r.RoundTrips > 0 {
			rts = fmt.Sprintf("%6.2f", r.RoundTrips)
		}
		fmt.Fprintf(stdout, "%-12s %-18s %-12s %5d %9.2f %9.2f %8.2f %6s\n", r.Path, r.Tool, r.Host, r.N, r.P50ms, r.P90ms, r.Ratio, rts)
	}
	return 0
}

// minRTTForRoundTrips: below it (a host on the same machine or LAN) the
// tool's own time on the host, not the link, is what a call costs, and
// round trips are not reported.
const minRTTForRoundTrips = 5.0 // ms

type benchPath struct {
	name    string
	host    string
	backend mcp.Backend
	fanout  []string
	cold    bool
	// ping measures the link's round trip (the ssh-channel path).
	ping interface {
		Ping(context.Context) (time.Duration, error)
	}
	// allTools: every tool of the per-tool view, not only the first three.
	allTools bool
}

func (p benchPath) measure(ctx context.Context, socket string, n int) ([]benchRow, error) {
	getenv := func(k string) string {
		switch k {
		case "LIBTMUX_SOCKET":
			return socket
		case "TMUX", "TMUX_PANE", "LIBTMUX_SOCKET_PATH":
			return ""
		}
		return os.Getenv(k)
	}
	srv, err := mcp.New(mcp.Options{Settings: mcp.Settings{Safety: mcp.TierDestructive, SuppressHistory: true, WaitMax: 30}, Backend: p.backend, Getenv: getenv})
	if err != nil {
		return nil, err
	}
	cs, done, err := srv.InProcess(ctx, "fleetmux-bench")
	if err != nil {
		return nil, err
	}
	defer done()
	hosts := []string{p.host}
	if p.fanout != nil {
		hosts = p.fanout
	}
	call := func(name string, a map[string]any, host string) (map[string]any, time.Duration, error) {
		args := map[string]any{}
		for k, v := range a {
			args[k] = v
		}
		if p.backend.Fleet() {
			args["host"] = host
		}
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		d := time.Since(t0)
		if err != nil {
			return nil, d, err
		}
		if res.IsError {
			return nil, d, fmt.Errorf("%s: %s", name, benchErrorText(res))
		}
		out, _ := res.StructuredContent.(map[string]any)
		return out, d, nil
	}
	var rows []benchRow
	if p.cold {
		_, d, err := call("list_sessions", nil, p.host)
		if err != nil {
			return nil, err
		}
		rows = append(rows, benchRow{Path: p.name, Tool: "cold-first-call", Host: p.host, N: 1, P50ms: ms(d), P90ms: ms(d)})
	}
	pane := ""
	for _, h := range hosts {
		out, _, err := call("create_session", map[string]any{"session_name": "bench"}, h)
		if err != nil {
			return nil, err
		}
		pane, _ = out["active_pane_id"].(string)
	}
	defer func() {
		for _, h := range hosts {
			// tmux leaves its socket file behind: remove this machine's.
			var sock string
			if h == mcp.LocalHost {
				if out, _, err := call("display_message", map[string]any{"format_string": "#{socket_path}"}, h); err == nil {
					sock, _ = out["result"].(string)
				}
			}
			_, _, _ = call("kill_server", nil, h)
			if strings.HasPrefix(filepath.Base(sock), "fleetmux-bench-") {
				_ = os.Remove(sock)
			}
		}
	}()
	type step struct {
		name string
		args func() map[string]any
	}
	fixed := func(a map[string]any) func() map[string]any { return func() map[string]any { return a } }
	tools := []struct {
		label string
		steps []step
	}{
		{"list_sessions", []step{{"list_sessions", fixed(nil)}}},
		{"capture_pane", []step{{"capture_pane", fixed(map[string]any{"session_name": "bench"})}}},
		{"send_keys", []step{{"send_keys", fixed(map[string]any{"session_name": "bench", "keys": "C-u", "enter": false})}}},
		{"get_pane_info", []step{{"get_pane_info", fixed(map[string]any{"pane_id": pane})}}},
		{"list_panes", []step{{"list_panes", fixed(map[string]any{"session_name": "bench"})}}},
		{"display_message", []step{{"display_message", fixed(map[string]any{"pane_id": pane, "format_string": "#{pane_id}"})}}},
		{"snapshot_pane", []step{{"snapshot_pane", fixed(map[string]any{"pane_id": pane})}}},
		{"search_panes", []step{{"search_panes", fixed(map[string]any{"pattern": "fleetmux-bench-none"})}}},
	}
	// create_window and the kill_window of the window it made, each timed.
	var window string
	created := step{"create_window", fixed(map[string]any{"session_name": "bench"})}
	killed := step{"kill_window", func() map[string]any { return map[string]any{"window_id": window} }}
	tools = append(tools, struct {
		label string
		steps []step
	}{"create_window", []step{created}}, struct {
		label string
		steps []step
	}{"kill_window", []step{killed}})
	switch {
	case p.fanout != nil:
		tools = tools[:1]
	case !p.allTools:
		tools = tools[:3]
	}
	for _, tl := range tools {
		host := p.host
		name := tl.label
		if p.fanout != nil {
			name = "list_sessions(*)"
		}
		ds := make([]time.Duration, 0, n)
		for i := -3; i < n; i++ { // 3 warm-up calls
			st := tl.steps[0]
			if st.name == "kill_window" {
				out, _, err := call(created.name, created.args(), host)
				if err != nil {
					return nil, err
				}
				window, _ = out["window_id"].(string)
			}
			out, d, err := call(st.name, st.args(), host)
			if err != nil {
				return nil, err
			}
			if st.name == "create_window" {
				window, _ = out["window_id"].(string)
				if _, _, err := call(killed.name, killed.args(), host); err != nil {
					return nil, err
				}
			}
			if i >= 0 {
				ds = append(ds, d)
			}
		}
		sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
		rows = append(rows, benchRow{Path: p.name, Tool: name, Host: host, N: n, P50ms: ms(ds[len(ds)/2]), P90ms: ms(ds[len(ds)*9/10])})
	}
	return rows, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// benchErrorText is the text of an error result, for a one-line message.
func benchErrorText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "error result without text"
	}
	text := strings.Join(parts, "; ")
	return strings.ReplaceAll(text, "\n", " ")
}
