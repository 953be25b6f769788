package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// testEnv is one private tmux server (-L fleetmux-test-...) and one
// fleetmux MCP server connected to an in-memory client.
type testEnv struct {
	t      *testing.T
	socket string
	srv    *Server
	cs     *sdk.ClientSession
	mu     sync.Mutex
	vars   map[string]string
	closer func()
}

var socketSeq atomic.Int64

// envOption adjusts a test environment before the server starts.
type envOption func(*testEnv, *Options)

// withSettings replaces the start-up settings.
func withSettings(s Settings) envOption {
	return func(_ *testEnv, o *Options) { o.Settings = s }
}

// newEnv starts a tmux server with a "fixture" session (80x24) on a
// private socket and an MCP server whose LIBTMUX_SOCKET points at it.
func newEnv(t *testing.T, opts ...envOption) *testEnv {
	t.Helper()
	requireTmux(t)
	e := &testEnv{t: t, vars: map[string]string{}}
	e.socket = fmt.Sprintf("fleetmux-test-%d-%d", os.Getpid(), socketSeq.Add(1))
	e.vars["LIBTMUX_SOCKET"] = e.socket
	e.tmux("-f", testTmuxConf(t), "new-session", "-d", "-s", "fixture", "-x", "80", "-y", "24")
	t.Cleanup(func() { _ = tmuxtest.Command("-L", e.socket, "kill-server").Run() })
	o := Options{Settings: Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 30}}
	for _, opt := range opts {
		opt(e, &o)
	}
	o.Getenv = e.getenv
	srv, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.srv = srv
	ctx := context.Background()
	cs, closer, err := srv.InProcess(ctx, "fleetmux-test")
	if err != nil {
		t.Fatalf("InProcess: %v", err)
	}
	e.cs, e.closer = cs, closer
	t.Cleanup(closer)
	return e
}

func (e *testEnv) getenv(k string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.vars[k]; ok {
		return v
	}
	switch k {
	case "TMUX", "TMUX_PANE", "LIBTMUX_SOCKET_PATH":
		return "" // never leak the developer's own tmux into tests
	case "LIBTMUX_TMUX_BIN":
		return os.Getenv(tmuxtest.EnvBin) // the binary under test, "" for tmux on PATH
	}
	return os.Getenv(k)
}

// setVar changes a Getenv variable while the server runs.
func (e *testEnv) setVar(k, v string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.vars[k] = v
}

var tmuxOnce sync.Once
var tmuxErr error

func requireTmux(t *testing.T) {
	t.Helper()
	tmuxOnce.Do(func() { _, tmuxErr = tmuxtest.LookPath() })
	if tmuxErr != nil && testing.Short() {
		t.Skip("tmux is missing; with -short the tests that need it are skipped (the README's test command installs it)")
	}
	if tmuxErr != nil {
		t.Fatalf("tmux is required for these tests (the README's test command installs it): %v", tmuxErr)
	}
}

// tmux runs a tmux command on the test socket and returns stdout.
func (e *testEnv) tmux(args ...string) string {
	e.t.Helper()
	out, err := tmuxtest.Command(append([]string{"-L", e.socket}, args...)...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return strings.TrimRight(string(out), "\n")
}

// call invokes a tool through the MCP client.
func (e *testEnv) call(name string, args map[string]any) *sdk.CallToolResult {
	e.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := e.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

// ok calls a tool, fails on an error result and decodes the structured
// content into out (when non-nil). It returns the text content.
func (e *testEnv) ok(name string, args map[string]any, out any) string {
	e.t.Helper()
	res := e.call(name, args)
	if res.IsError {
		e.t.Fatalf("%s(%v) failed: %s", name, args, text(res))
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			e.t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s: decode %s: %v", name, b, err)
		}
	}
	return text(res)
}

// fail calls a tool and requires an error result containing want.
func (e *testEnv) fail(name string, args map[string]any, want string) *sdk.CallToolResult {
	e.t.Helper()
	res := e.call(name, args)
	if !res.IsError {
		e.t.Fatalf("%s(%v) succeeded, want error containing %q: %s", name, args, want, text(res))
	}
	if !strings.Contains(text(res), want) {
		e.t.Fatalf("%s(%v) error %q does not contain %q", name, args, text(res), want)
	}
	return res
}

// result decodes {"result": ...} of a wrapped tool.
func (e *testEnv) result(name string, args map[string]any, out any) string {
	e.t.Helper()
	var w struct {
		Result json.RawMessage `json:"result"`
	}
	txt := e.ok(name, args, &w)
	if out != nil {
		if err := json.Unmarshal(w.Result, out); err != nil {
			e.t.Fatalf("%s: decode result %s: %v", name, w.Result, err)
		}
	}
	return txt
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// firstPane returns the id of the fixture session's first pane.
func (e *testEnv) firstPane() string {
	return strings.Split(e.tmux("list-panes", "-t", "fixture", "-F", "#{pane_id}"), "\n")[0]
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

// testTmuxConf writes a tmux config whose panes run bash without rc files,
// so tests do not depend on the developer's or CI's shell start-up files.
func testTmuxConf(t *testing.T) string {
	t.Helper()
	p := t.TempDir() + "/tmux.conf"
	if err := writeFile(p, "set -g default-shell /bin/bash\nset -g default-command 'exec /bin/bash --norc --noprofile'\n"); err != nil {
		t.Fatal(err)
	}
	return p
}
