package main

import (
	"bufio"
	"context"
	"encoding/json"
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

// batchRows decodes a batch result's rows.
type batchRows struct {
	Results []struct {
		Index             int             `json:"index"`
		Tool              string          `json:"tool"`
		Success           bool            `json:"success"`
		Error             *string         `json:"error"`
		StructuredContent json.RawMessage `json:"structured_content"`
	} `json:"results"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
}

// TestBatchOnHostEndToEnd: a batch with host h1 acts on h1's tmux server,
// reached over a real sshd, and never on this machine's: readonly rows
// name h1, a mutating batch sets the option on h1 only (read out of band
// on each server), an operation naming another host runs there after its
// own host's gate, a host capped readonly refuses a mutating operation
// inside a batch, and the audit names the host each nested call ran on.
func TestBatchOnHostEndToEnd(t *testing.T) {
	env := sshtest.New(t)
	h1 := env.StartHost("h1", sshtest.HostOptions{})
	h2 := env.StartHost("h2", sshtest.HostOptions{})
	dir := t.TempDir()
	cfg, _ := env.WriteFleetFiles(dir, h1, h2)

	sock := fmt.Sprintf("fleetmux-test-batchhost-%d", os.Getpid())
	defer exec.Command("tmux", "-L", sock, "kill-server").Run()
	state := filepath.Join(dir, "state.db")
	cmd := exec.Command(binPath, "--ssh-config", cfg, "--hosts", "h*", "--host-safety", "h2=readonly", "--state", state)
	cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET="+sock, "TMUX=", "TMUX_PANE=", "LIBTMUX_SAFETY=destructive")
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "batch-host-e2e", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	c := &fleetClient{t: t, cs: cs}

	// option reads a global user option out of band: on this machine, or
	// on a test host's own tmux server (its TMUX_TMPDIR).
	option := func(h *sshtest.Host, name string) string {
		t.Helper()
		oc := exec.Command("tmux", "-L", sock, "show-options", "-g", "-q", "-v", name)
		if h != nil {
			oc.Env = append(os.Environ(), "TMUX_TMPDIR="+h.TmuxTmpDir)
		}
		out, err := oc.CombinedOutput()
		if err != nil && !strings.Contains(string(out), "no server running") && !strings.Contains(string(out), "error connecting") {
			t.Fatalf("show-options %s: %v %s", name, err, out)
		}
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	batch := func(tool, host string, ops ...map[string]any) batchRows {
		t.Helper()
		opsAny := make([]any, len(ops))
		for i, op := range ops {
			opsAny[i] = op
		}
		var rows batchRows
		decodeInto(t, c.ok(tool, map[string]any{"host": host, "on_error": "continue", "operations": opsAny}), &rows)
		return rows
	}
	c.ok("create_session", map[string]any{"host": "h1", "session_name": "on-h1"})
	c.ok("create_session", map[string]any{"host": "local", "session_name": "on-local"})
	// h2 is capped readonly: its session is made out of band.
	nc := exec.Command("tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "on-h2")
	nc.Env = append(os.Environ(), "TMUX_TMPDIR="+h2.TmuxTmpDir, "TMUX=")
	if out, err := nc.CombinedOutput(); err != nil {
		t.Fatalf("h2 session: %v %s", err, out)
	}

	// A readonly batch on h1 lists h1's sessions, rows saying host h1.
	rows := batch("call_readonly_tools_batch", "h1", map[string]any{"tool": "list_sessions", "arguments": map[string]any{}})
	if rows.Succeeded != 1 {
		t.Fatalf("readonly batch on h1: %+v", rows)
	}
	var sessions []struct {
		SessionName string `json:"session_name"`
		Host        string `json:"host"`
	}
	var wrapped struct {
		Result json.RawMessage `json:"result"`
	}
	decodeInto(t, string(rows.Results[0].StructuredContent), &wrapped)
	decodeInto(t, string(wrapped.Result), &sessions)
	if len(sessions) != 1 || sessions[0].SessionName != "on-h1" || sessions[0].Host != "h1" {
		t.Fatalf("readonly batch on h1 listed %s", rows.Results[0].StructuredContent)
	}

	// A mutating batch on h1 sets the option on h1's server only.
	set := func(value string, host ...string) map[string]any {
		args := map[string]any{"option": "@i19batch", "value": value, "global_": true}
		if len(host) > 0 {
			args["host"] = host[0]
		}
		return map[string]any{"tool": "set_option", "arguments": args}
	}
	rows = batch("call_mutating_tools_batch", "h1", set("on-h1"))
	if rows.Succeeded != 1 {
		t.Fatalf("mutating batch on h1: %+v", rows)
	}
	if got := option(h1, "@i19batch"); got != "on-h1" {
		t.Fatalf("h1's @i19batch = %q, want on-h1", got)
	}
	if got := option(nil, "@i19batch"); got != "" {
		t.Fatalf("the batch on h1 set the option on this machine: %q", got)
	}

	// An operation naming another host runs there, after that host's
	// gate: local is uncapped, h2 is capped readonly and refuses it; the
	// operation without a host still runs on the batch's host.
	rows = batch("call_mutating_tools_batch", "h1", set("to-local", "local"), set("to-h2", "h2"), set("h1-again"))
	if rows.Succeeded != 2 || rows.Failed != 1 || rows.Results[1].Success || rows.Results[1].Error == nil || !strings.Contains(*rows.Results[1].Error, "capped at readonly") {
		t.Fatalf("mixed-host batch: %+v", rows)
	}
	for _, w := range []struct {
		h    *sshtest.Host
		name string
		want string
	}{{nil, "local", "to-local"}, {h2, "h2", ""}, {h1, "h1", "h1-again"}} {
		if got := option(w.h, "@i19batch"); got != w.want {
			t.Fatalf("%s's @i19batch = %q, want %q", w.name, got, w.want)
		}
	}
	// A readonly operation on the capped host passes its gate.
	rows = batch("call_readonly_tools_batch", "local", map[string]any{"tool": "list_sessions", "arguments": map[string]any{"host": "h2"}})
	if rows.Succeeded != 1 {
		t.Fatalf("readonly op on h2: %+v", rows)
	}
	decodeInto(t, string(rows.Results[0].StructuredContent), &wrapped)
	decodeInto(t, string(wrapped.Result), &sessions)
	if len(sessions) != 1 || sessions[0].SessionName != "on-h2" || sessions[0].Host != "h2" {
		t.Fatalf("readonly op on h2 listed %s", rows.Results[0].StructuredContent)
	}
	// A mutating batch on the capped host is refused whole.
	if res := c.call("call_mutating_tools_batch", map[string]any{"host": "h2", "operations": []any{set("x")}}); !res.IsError || !strings.Contains(resultText(res), "capped at readonly") {
		t.Fatalf("mutating batch on h2: %s", resultText(res))
	}
	if got := option(h2, "@i19batch"); got != "" {
		t.Fatalf("h2's @i19batch = %q", got)
	}
	// Host lists of a fan-out are checked whole before anything runs:
	// 20,000 unknown names and h1, then a few unknown names and h1.
	ghosts := make([]any, 0, 20001)
	for i := range 20000 {
		ghosts = append(ghosts, fmt.Sprintf("ghost-%05d", i))
	}
	for _, tc := range []struct {
		hosts []any
		want  string
	}{
		{append(ghosts, "h1"), "host list of 20001 entries"},
		{[]any{"h1", "ghost-1", "ghost-2", "local"}, `2 entries name no selected host ("ghost-1", "ghost-2")`},
	} {
		res := c.call("set_option", map[string]any{"host": tc.hosts, "option": "@i19fan", "value": "ran", "global_": true})
		if !res.IsError || !strings.Contains(resultText(res), tc.want) || len(resultText(res)) > 600 {
			t.Fatalf("host list of %d: %.400s", len(tc.hosts), resultText(res))
		}
	}
	if a, b := option(h1, "@i19fan"), option(nil, "@i19fan"); a != "" || b != "" {
		t.Fatalf("a refused host list ran: h1 %q, local %q", a, b)
	}
	cs.Close()

	// The audit names the host every nested call ran on.
	aout, err := exec.Command(binPath, "audit", "--state", state, "--json", "--limit", "0").Output()
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	got := map[string]int{}
	fanRecords := 0
	sc := bufio.NewScanner(strings.NewReader(string(aout)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Host, Tool, Parent, Outcome string
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if rec.Tool == "set_option" && rec.Parent == "" { // only the host-list calls
			if rec.Outcome == "ok" {
				t.Errorf("a refused host list audited as ok: %.300s", sc.Text())
			}
			fanRecords++
			if len(rec.Host) > 256 {
				t.Errorf("audit host field of %d bytes", len(rec.Host))
			}
		}
		if rec.Parent != "" {
			got[rec.Parent+" "+rec.Tool+"@"+rec.Host+" "+rec.Outcome]++
		}
	}
	if fanRecords != 2 {
		t.Errorf("%d audit records for the two refused host lists, want 2", fanRecords)
	}
	for k, n := range map[string]int{
		"call_readonly_tools_batch list_sessions@h1 ok":   1,
		"call_mutating_tools_batch set_option@h1 ok":      2,
		"call_mutating_tools_batch set_option@local ok":   1,
		"call_mutating_tools_batch set_option@h2 refused": 1,
		"call_readonly_tools_batch list_sessions@h2 ok":   1,
	} {
		if got[k] != n {
			t.Errorf("audit: %d records %q, want %d (all nested: %v)", got[k], k, n, got)
		}
	}
}
