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

	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// TestServerTierEveryWay: a server started readonly (LIBTMUX_SAFETY) in
// fleet mode stays readonly whichever way a call arrives: directly on
// this machine, on a host (even one whose --host-safety cap says
// destructive: a cap only lowers), fanned out, inside the readonly batch
// on a host, and with an operation that names another host. Nothing
// changes on any tmux server (read out of band), and every refusal has
// its audit record.
func TestServerTierEveryWay(t *testing.T) {
	env := sshtest.New(t)
	h1 := env.StartHost("h1", sshtest.HostOptions{})
	dir := t.TempDir()
	cfg, _ := env.WriteFleetFiles(dir, h1)

	sock := fmt.Sprintf("fleetmux-test-tierways-%d", os.Getpid())
	defer exec.Command("tmux", "-L", sock, "kill-server").Run()
	tmuxOn := func(h *sshtest.Host, args ...string) string {
		t.Helper()
		c := exec.Command("tmux", append([]string{"-L", sock, "-f", "/dev/null"}, args...)...)
		c.Env = append(os.Environ(), "TMUX=")
		if h != nil {
			c.Env = append(c.Env, "TMUX_TMPDIR="+h.TmuxTmpDir)
		}
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tmuxOn(nil, "new-session", "-d", "-s", "keep")
	tmuxOn(h1, "new-session", "-d", "-s", "keep")
	snapshot := func() string {
		return tmuxOn(nil, "list-sessions", "-F", "#{session_name}") + "|" + tmuxOn(nil, "show-options", "-gqv", "@tier") +
			"|" + tmuxOn(h1, "list-sessions", "-F", "#{session_name}") + "|" + tmuxOn(h1, "show-options", "-gqv", "@tier")
	}
	before := snapshot()

	state := filepath.Join(dir, "state.db")
	cmd := exec.Command(binPath, "--ssh-config", cfg, "--hosts", "h1", "--host-safety", "h1=destructive", "--state", state)
	cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET="+sock, "TMUX=", "TMUX_PANE=", "LIBTMUX_SAFETY=readonly")
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "tier-ways", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &fleetClient{t: t, cs: cs}

	setOpt := map[string]any{"option": "@tier", "value": "x", "global_": true}
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{k: v}
		for kk, vv := range m {
			out[kk] = vv
		}
		return out
	}
	op := func(tool string, args map[string]any) map[string]any {
		return map[string]any{"tool": tool, "arguments": args}
	}
	cases := []struct {
		way, tool string
		args      map[string]any
		want      string // in the error text or the refused batch row
	}{
		{"direct", "set_option", with(setOpt, "host", "local"), "Unknown tool: 'set_option'"},
		{"host", "set_option", with(setOpt, "host", "h1"), "Unknown tool: 'set_option'"},
		{"host destructive", "kill_server", map[string]any{"host": "h1"}, "Unknown tool: 'kill_server'"},
		{"fanout", "set_option", with(setOpt, "host", []any{"local", "h1"}), "Unknown tool: 'set_option'"},
		{"fanout create", "create_session", map[string]any{"host": []any{"local", "h1"}, "session_name": "new"}, "Unknown tool: 'create_session'"},
		{"mutating batch", "call_mutating_tools_batch", map[string]any{"host": "h1", "operations": []any{op("set_option", setOpt)}}, "Unknown tool: 'call_mutating_tools_batch'"},
		{"readonly batch", "call_readonly_tools_batch", map[string]any{"host": "h1", "operations": []any{op("set_option", setOpt)}}, "Unknown tool: 'set_option'"},
		{"readonly batch, op on local", "call_readonly_tools_batch", map[string]any{"host": "h1", "operations": []any{op("kill_session", map[string]any{"host": "local", "session_name": "keep"})}}, "Unknown tool: 'kill_session'"},
	}
	for _, tc := range cases {
		res := c.call(tc.tool, tc.args)
		text := resultText(res)
		if !strings.Contains(text, tc.want) {
			t.Errorf("%s: %s answered %.300q, want it to contain %q", tc.way, tc.tool, text, tc.want)
		}
		if strings.HasPrefix(tc.tool, "call_readonly") && !strings.Contains(text, `"succeeded":0`) {
			t.Errorf("%s: a row succeeded: %.300s", tc.way, text)
		}
	}
	if after := snapshot(); after != before {
		t.Fatalf("a readonly server changed tmux state: before %q, after %q", before, after)
	}
	_ = cs.Close()
	audit, err := exec.Command(binPath, "audit", "--state", state, "--json", "--since", "1h", "--limit", "0").Output()
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	// Every call and every refused batch operation has a record; none
	// says ok except the two readonly batches themselves.
	records := strings.Count(string(audit), "\n")
	if records != len(cases)+2 {
		t.Errorf("%d audit records for %d calls and 2 refused batch operations:\n%s", records, len(cases), audit)
	}
	if ok := strings.Count(string(audit), `"outcome":"ok"`); ok != 2 {
		t.Errorf("%d records say ok, want the 2 readonly batches:\n%s", ok, audit)
	}
}
