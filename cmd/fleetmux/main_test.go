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
	"syscall"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fleetmux-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "fleetmux")
	// The tmux under test (FLEETMUX_TEST_TMUX) is the one fleetmux runs:
	// every fleetmux these tests start inherits it, and so do in-process runs.
	if bin := os.Getenv(tmuxtest.EnvBin); bin != "" {
		if err := os.Setenv("LIBTMUX_TMUX_BIN", bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	tmuxtest.SweepSockets(os.Getpid())
	os.Exit(code)
}

func TestVersionAndHelp(t *testing.T) {
	out, err := exec.Command(binPath, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "fleetmux ") {
		t.Fatalf("--version: %v %q", err, out)
	}
	out, err = exec.Command(binPath, "--help").Output()
	if err != nil || !strings.Contains(string(out), "Usage:") || !strings.Contains(string(out), "-hosts") {
		t.Fatalf("--help: %v %q", err, out)
	}
	cmd := exec.Command(binPath, "--bogus")
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("--bogus exit %v", err)
	}
}

func TestBadHistoryEnvFailsStartup(t *testing.T) {
	cmd := exec.Command(binPath)
	cmd.Env = append(os.Environ(), "LIBTMUX_SUPPRESS_HISTORY=secret-value")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("start-up should fail")
	}
	if !strings.Contains(string(out), "LIBTMUX_SUPPRESS_HISTORY must be unset, '0', or '1'") || strings.Contains(string(out), "secret-value") {
		t.Fatalf("output %q", out)
	}
}

// TestStdioEndToEnd drives the built binary over stdio with the SDK client.
func TestStdioEndToEnd(t *testing.T) {
	sock := fmt.Sprintf("fleetmux-test-e2e-%d", os.Getpid())
	if out, err := tmuxtest.Command("-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "e2e").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	defer tmuxtest.Command("-L", sock, "kill-server").Run()
	cmd := exec.Command(binPath, "--state", filepath.Join(t.TempDir(), "state.db"))
	cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET="+sock, "TMUX=", "TMUX_PANE=")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The contract's identity, and fleetmux's own in the title.
	if si := cs.InitializeResult().ServerInfo; si.Name != "tmux" || si.Version != "0.1.0a20" ||
		si.WebsiteURL != "https://libtmux-mcp.git-pull.com/" || si.Title != "fleetmux "+version {
		t.Fatalf("serverInfo = %+v", si)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 51 {
		t.Fatalf("tools/list: %v (%d tools, want 51 at mutating)", err, len(tools.Tools))
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_sessions: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"session_name":"e2e"`) {
		t.Fatalf("structured %s", b)
	}
}

// TestLegacyInitializeRawWire speaks raw JSON-RPC the way older clients
// do and checks the property order of an input schema on the wire.
func TestLegacyInitializeRawWire(t *testing.T) {
	cmd := exec.Command(binPath, "--no-audit")
	cmd.Env = append(os.Environ(), "TMUX=", "TMUX_PANE=")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	send := func(s string) { fmt.Fprintln(stdin, s) }
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var list string
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"id":2`) {
			list = sc.Text()
			break
		}
	}
	stdin.Close()
	i := strings.Index(list, `"name":"send_keys"`)
	if i < 0 {
		t.Fatalf("send_keys not listed: %.300s", list)
	}
	seg := list[i:]
	order := []string{`"keys"`, `"pane_id"`, `"session_name"`, `"session_id"`, `"window_id"`, `"enter"`, `"literal"`, `"suppress_history"`, `"socket_name"`}
	last := -1
	for _, k := range order {
		j := strings.Index(seg, k)
		if j <= last {
			t.Fatalf("property %s out of order in %.400s", k, seg)
		}
		last = j
	}
}

// TestAuditTwoClientsKill9 runs two servers on one state file, kills one
// with SIGKILL and checks that `fleetmux audit` shows every call of both
// and that no secret reached the file.
func TestAuditTwoClientsKill9(t *testing.T) {
	sock := fmt.Sprintf("fleetmux-test-audit-%d", os.Getpid())
	if out, err := tmuxtest.Command("-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "a", "/bin/sh").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	defer tmuxtest.Command("-L", sock, "kill-server").Run()
	state := filepath.Join(t.TempDir(), "state.db")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const secret = "hunter2-super-secret"
	var cmds []*exec.Cmd
	var sessions []*sdk.ClientSession
	for i := 0; i < 2; i++ {
		cmd := exec.Command(binPath, "--state", state)
		cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET="+sock, "TMUX=", "TMUX_PANE=")
		c := sdk.NewClient(&sdk.Implementation{Name: fmt.Sprintf("client-%d", i), Version: "1"}, nil)
		cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		sessions = append(sessions, cs)
	}
	defer sessions[1].Close()
	const perClient = 5
	for i := 0; i < perClient; i++ {
		for _, cs := range sessions {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "send_keys", Arguments: map[string]any{"keys": "echo " + secret, "enter": false}})
			if err != nil || res.IsError {
				t.Fatalf("send_keys: %v %+v", err, res)
			}
		}
	}
	if err := cmds[0].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binPath, "audit", "--state", state, "--json", "--since", "1h", "--limit", "0").Output()
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	clients := map[string]int{}
	for _, l := range lines {
		var rec struct {
			Tool, Client, Outcome string
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		if rec.Tool == "send_keys" && rec.Outcome == "ok" {
			clients[rec.Client]++
		}
	}
	if clients["client-0"] != perClient || clients["client-1"] != perClient {
		t.Fatalf("audit records per client %v, want %d each:\n%s", clients, perClient, out)
	}
	raw, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secret) {
		t.Fatal("the secret reached the state file")
	}
}
