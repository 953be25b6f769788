package main

import (
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

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	"github.com/fleetmux/fleetmux/transport/sshtest"
)

type fleetClient struct {
	t  *testing.T
	cs *sdk.ClientSession
}

func (c *fleetClient) call(name string, args map[string]any) *sdk.CallToolResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s: %v", name, err)
	}
	return res
}

func (c *fleetClient) ok(name string, args map[string]any) string {
	c.t.Helper()
	res := c.call(name, args)
	if res.IsError {
		c.t.Fatalf("%s(%v): %s", name, args, resultText(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	return string(b)
}

func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TestFleetEndToEnd drives the binary in fleet mode against two real
// sshd hosts on 127.0.0.1 and one host that is down.
func TestFleetEndToEnd(t *testing.T) {
	env := sshtest.New(t)
	h1 := env.StartHost("dev-1", sshtest.HostOptions{})
	h2 := env.StartHost("dev-2", sshtest.HostOptions{})
	dir := t.TempDir()
	cfg, kh := env.WriteFleetFiles(dir, h1, h2)
	dead := fmt.Sprintf("\nHost dead-1\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile %s\n  ConnectTimeout 2\n", sshtest.FreePort(t), env.User, env.UserKeyFile, kh)
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(dead)
	f.Close()

	sock := fmt.Sprintf("fleetmux-test-fleet-%d", os.Getpid())
	defer tmuxtest.Command("-L", sock, "kill-server").Run()
	state := filepath.Join(dir, "state.db")
	cmd := exec.Command(binPath, "--ssh-config", cfg, "--hosts", "dev-*,dead-*", "--host-safety", "dev-2=readonly", "--state", state)
	cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET="+sock, "TMUX=", "TMUX_PANE=", "LIBTMUX_SAFETY=destructive")
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := sdk.NewClient(&sdk.Implementation{Name: "fleet-e2e", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	c := &fleetClient{t: t, cs: cs}

	hosts := c.ok("list_hosts", map[string]any{})
	for _, h := range []string{`"host":"local"`, `"host":"dev-1"`, `"host":"dev-2"`, `"host":"dead-1"`, `"safety":"readonly"`} {
		if !strings.Contains(hosts, h) {
			t.Fatalf("list_hosts lacks %s: %s", h, hosts)
		}
	}
	// Sessions on each host are isolated.
	c.ok("create_session", map[string]any{"host": "dev-1", "session_name": "build"})
	c.ok("create_session", map[string]any{"host": "local", "session_name": "here"})
	if got := c.ok("list_sessions", map[string]any{"host": "dev-1"}); !strings.Contains(got, `"session_name":"build"`) || !strings.Contains(got, `"host":"dev-1"`) || strings.Contains(got, "here") {
		t.Fatalf("dev-1 sessions %s", got)
	}
	// The readonly cap of dev-2 refuses mutating tools.
	if res := c.call("create_session", map[string]any{"host": "dev-2", "session_name": "x"}); !res.IsError || !strings.Contains(resultText(res), "capped at readonly") {
		t.Fatalf("dev-2 cap: %s", resultText(res))
	}
	// A readonly host stays readonly whatever the format: the double
	// expansion that builds "#(" inside tmux is refused before tmux runs.
	marker := filepath.Join(t.TempDir(), "ran")
	c.ok("create_session", map[string]any{"host": "dev-1", "session_name": "fmt"})
	for _, f := range []string{"#{E:#{a:35}(touch " + marker + ")}" + strings.Repeat("#{p9999:}", 200), "#(touch " + marker + ")"} {
		for _, h := range []string{"dev-1", "dev-2", "local"} {
			if res := c.call("display_message", map[string]any{"host": h, "format_string": f}); !res.IsError {
				t.Fatalf("display_message on %s accepted %.40q: %s", h, f, resultText(res))
			}
		}
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a display_message format ran a command")
	}
	// Fan-out over every host: dead-1 is reported, the others answer.
	res := c.call("list_sessions", map[string]any{"host": "*"})
	if res.IsError {
		t.Fatalf("fan-out: %s", resultText(res))
	}
	txt := resultText(res)
	if !strings.Contains(txt, `"build"`) || !strings.Contains(txt, `"here"`) || !strings.Contains(txt, "dead-1") {
		t.Fatalf("fan-out result %s", txt)
	}
	// Hostile strings reach remote tmux byte for byte.
	hostile := `it's "q" $(touch /tmp/fleetmux-pwned) ` + "`id`; rm -rf x ü ✓ -n"
	c.ok("rename_session", map[string]any{"host": "dev-1", "session_name": "build", "new_name": hostile})
	if got := c.ok("list_sessions", map[string]any{"host": "dev-1"}); !strings.Contains(got, mustJSON(hostile)) {
		t.Fatalf("hostile name did not round-trip: %s", got)
	}
	if _, err := os.Stat("/tmp/fleetmux-pwned"); err == nil {
		t.Fatal("a remote shell interpreted the name")
	}
	// run_command on the remote host waits for completion.
	out := c.ok("run_command", map[string]any{"host": "dev-1", "session_name": hostile, "command": "echo fleet-$((6*7))", "timeout": 20})
	if !strings.Contains(out, `"exit_status":0`) || !strings.Contains(out, "fleet-42") {
		t.Fatalf("run_command: %s", out)
	}
	// A fan-out action: one call, every host's outcome, grouped text;
	// dev-2's cap refuses it there, dead-1 fails fast.
	c.ok("create_session", map[string]any{"host": "dev-1", "session_name": "fan"})
	res = c.call("run_command", map[string]any{"host": []any{"dev-1", "dev-2", "dead-1"}, "session_name": "fan", "command": "echo fan-$((6*7))", "timeout": 20})
	txt = resultText(res)
	for _, frag := range []string{"run_command on 3 hosts: 1 ok, 1 failed, 1 refused", "1 host (dev-1): exit 0", "\nfan-42\n", "1 host (dev-2): refused:", "1 host (dead-1): error:"} {
		if res.IsError || !strings.Contains(txt, frag) {
			t.Fatalf("fan-out run_command lacks %q: %s", frag, txt)
		}
	}
	// Unknown and unreachable hosts are errors that name the host.
	if res := c.call("list_sessions", map[string]any{"host": "nosuch"}); !res.IsError || !strings.Contains(resultText(res), "nosuch") {
		t.Fatalf("unknown host: %s", resultText(res))
	}
	start := time.Now()
	if res := c.call("list_sessions", map[string]any{"host": "dead-1"}); !res.IsError || !strings.Contains(resultText(res), "dead-1") {
		t.Fatalf("dead host: %s", resultText(res))
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("dead host took %v", d)
	}
	cs.Close()
	// The audit records the host of every call.
	aout, err := exec.Command(binPath, "audit", "--state", state, "--json", "--host", "dev-1", "--limit", "0").Output()
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	if !strings.Contains(string(aout), `"tool":"run_command"`) || strings.Contains(string(aout), "fleet-$((6*7))") {
		t.Fatalf("audit for dev-1: %s", aout)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
