package mcp

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"sort"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/transport"
)

// envRunner runs argv locally with its own TMUX_TMPDIR, so each fake host
// has its own tmux servers: the routing layer cannot tell it from SSH.
type envRunner struct {
	inner  transport.Runner
	tmpdir string
}

func (r envRunner) Run(ctx context.Context, argv []string, stdin []byte) (transport.Result, error) {
	return r.inner.Run(ctx, append([]string{"env", "TMUX_TMPDIR=" + r.tmpdir}, argv...), stdin)
}

type fakeFleet struct {
	runners map[string]transport.Runner
	down    map[string]bool
	caps    map[string]Tier
}

func (f *fakeFleet) Runner(ctx context.Context, host string) (transport.Runner, error) {
	if f.down[host] {
		return nil, fmt.Errorf("dial tcp 127.0.0.1:1: connection refused: %w", transport.ErrUnreachable)
	}
	r, ok := f.runners[host]
	if !ok {
		return nil, errors.New("unknown host")
	}
	return r, nil
}
func (f *fakeFleet) Fleet() bool { return true }
func (f *fakeFleet) Match(p string) ([]string, error) {
	var out []string
	for h := range f.runners {
		if ok, _ := path.Match(p, h); ok {
			out = append(out, h)
		}
	}
	for h := range f.down {
		if ok, _ := path.Match(p, h); ok {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no selected host matches %q", p)
	}
	return out, nil
}
func (f *fakeFleet) Cap(h string) (Tier, bool) { t, ok := f.caps[h]; return t, ok }
func (f *fakeFleet) Local(h string) bool       { return h == LocalHost }

func newFleetEnv(t *testing.T) (*testEnv, map[string]string) {
	t.Helper()
	requireTmux(t)
	local := transport.NewLocal()
	f := &fakeFleet{runners: map[string]transport.Runner{}, down: map[string]bool{"down-1": true}, caps: map[string]Tier{"prod-1": TierReadonly}}
	dirs := map[string]string{}
	for _, h := range []string{"dev-1", "dev-2", "prod-1"} {
		d := t.TempDir()
		dirs[h] = d
		f.runners[h] = envRunner{local, d}
		cmd := exec.Command("tmux", "-f", "/dev/null", "new-session", "-d", "-s", "on-"+h)
		cmd.Env = append(cmd.Environ(), "TMUX_TMPDIR="+d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("start tmux for %s: %v %s", h, err, out)
		}
		t.Cleanup(func() {
			c := exec.Command("tmux", "kill-server")
			c.Env = append(c.Environ(), "TMUX_TMPDIR="+d)
			_ = c.Run()
		})
	}
	f.runners[LocalHost] = local
	e := &testEnv{t: t, vars: map[string]string{"LIBTMUX_SOCKET": ""}}
	srv, err := New(Options{Settings: Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 30}, Backend: f, Getenv: e.getenv})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	cs, closer, err := srv.InProcess(context.Background(), "fleet-test")
	if err != nil {
		t.Fatal(err)
	}
	e.cs = cs
	t.Cleanup(closer)
	return e, dirs
}

func TestFleetSurface(t *testing.T) {
	e, _ := newFleetEnv(t)
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		names[tl.Name] = tl
	}
	if names["list_hosts"] == nil || len(res.Tools) != 57 {
		t.Fatalf("fleet mode has %d tools (list_hosts present: %v)", len(res.Tools), names["list_hosts"] != nil)
	}
	for _, tl := range res.Tools {
		props := jsonRoundTrip(t, tl.InputSchema).(map[string]any)["properties"].(map[string]any)
		if _, ok := props["host"]; !ok && tl.Name != "list_hosts" {
			t.Errorf("%s has no host parameter", tl.Name)
		}
	}
}

func TestFleetRoutingAndFanout(t *testing.T) {
	e, _ := newFleetEnv(t)
	var s []SessionInfo
	e.result("list_sessions", map[string]any{"host": "dev-1"}, &s)
	if len(s) != 1 || *s[0].SessionName != "on-dev-1" || s[0].Host == nil || *s[0].Host != "dev-1" {
		t.Fatalf("dev-1 sessions %+v", s)
	}
	// Fan-out: dev-1, dev-2, prod-1 answer; down-1 is reported, not fatal.
	res := e.call("list_sessions", map[string]any{"host": "*-1"})
	if res.IsError {
		t.Fatalf("fan-out failed: %s", text(res))
	}
	if !strings.Contains(text(res), "on-dev-1") || !strings.Contains(text(res), "on-prod-1") || strings.Contains(text(res), "on-dev-2") {
		t.Fatalf("fan-out text %s", text(res))
	}
	failed, _ := res.Meta["fleetmux/failed_hosts"].([]any)
	if len(failed) != 1 || !strings.Contains(fmt.Sprint(failed[0]), "down-1") {
		t.Fatalf("failed hosts %v", res.Meta)
	}
	// Per-host safety cap.
	e.fail("create_session", map[string]any{"host": "prod-1", "session_name": "x"}, "capped at readonly")
	e.ok("create_session", map[string]any{"host": "dev-2", "session_name": "x"}, nil)
	// Unknown and unreachable hosts name the host.
	e.fail("list_sessions", map[string]any{"host": "nosuch"}, `host "nosuch"`)
	e.fail("list_sessions", map[string]any{"host": "down-1"}, `host "down-1"`)
	// Globs only on fan-out tools.
	e.fail("create_session", map[string]any{"host": "dev-*"}, "runs on one host")
	// Isolation: the session created on dev-2 is not on dev-1.
	e.result("list_sessions", map[string]any{"host": "dev-1"}, &s)
	if len(s) != 1 {
		t.Fatalf("dev-1 sees %d sessions", len(s))
	}
}

func TestFleetServerInfoFanout(t *testing.T) {
	e, _ := newFleetEnv(t)
	var info ServerInfo
	e.ok("get_server_info", map[string]any{"host": "dev-*"}, &info)
	if len(info.Servers) != 2 || !info.IsAlive || info.SessionCount != 2 || *info.Host != "*" {
		t.Fatalf("aggregate %+v", info)
	}
	for _, s := range info.Servers {
		if s.Host == nil || !strings.HasPrefix(*s.Host, "dev-") || !s.IsAlive {
			t.Fatalf("per-host %+v", s)
		}
	}
}
