package mcp

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/tools"
	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
	"github.com/fleetmux/fleetmux/transport"
)

// envRunner runs argv locally with its own TMUX_TMPDIR, so each fake host
// has its own tmux servers: the routing layer cannot tell it from SSH.
type envRunner struct {
	inner  transport.Runner
	tmpdir string
}

func (r envRunner) Run(ctx context.Context, argv []string, stdin []byte) (transport.Result, error) {
	full := append([]string{"env", "TMUX_TMPDIR=" + r.tmpdir}, argv...)
	if len(argv) > 0 && argv[0] == "tmux" {
		full[2] = tmuxtest.Bin() // the tmux under test, as a host's PATH would pick it
	}
	return r.inner.Run(ctx, full, stdin)
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

func newFleetEnv(t *testing.T, opts ...envOption) (*testEnv, map[string]string) {
	t.Helper()
	conf := testTmuxConf(t)
	requireTmux(t)
	local := transport.NewLocal()
	f := &fakeFleet{runners: map[string]transport.Runner{}, down: map[string]bool{"down-1": true}, caps: map[string]Tier{"prod-1": TierReadonly}}
	dirs := map[string]string{}
	for _, h := range []string{"dev-1", "dev-2", "prod-1"} {
		d := t.TempDir()
		dirs[h] = d
		f.runners[h] = envRunner{local, d}
		cmd := tmuxtest.Command("-f", conf, "new-session", "-d", "-s", "on-"+h)
		cmd.Env = append(cmd.Environ(), "TMUX_TMPDIR="+d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("start tmux for %s: %v %s", h, err, out)
		}
		t.Cleanup(func() {
			c := tmuxtest.Command("kill-server")
			c.Env = append(c.Environ(), "TMUX_TMPDIR="+d)
			_ = c.Run()
		})
	}
	f.runners[LocalHost] = local
	e := &testEnv{t: t, vars: map[string]string{"LIBTMUX_SOCKET": ""}}
	o := Options{Settings: Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 30}, Backend: f, Getenv: e.getenv}
	for _, opt := range opts {
		opt(e, &o)
	}
	srv, err := New(o)
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
	if names["list_hosts"] == nil || names["get_job"] == nil || len(res.Tools) != 60 {
		t.Fatalf("fleet mode has %d tools (list_hosts present: %v)", len(res.Tools), names["list_hosts"] != nil)
	}
	for _, tl := range res.Tools {
		props := jsonRoundTrip(t, tl.InputSchema).(map[string]any)["properties"].(map[string]any)
		_, ok := props["host"]
		if noHost := tl.Name == "list_hosts" || tl.Name == "get_job" || tl.Name == "cancel_job"; ok == noHost {
			t.Errorf("%s: host parameter present %v", tl.Name, ok)
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
	e.fail("select_window", map[string]any{"host": "dev-*", "window_index": "0"}, "runs on one host")
	// Isolation: the session created on dev-2 is not on dev-1.
	e.result("list_sessions", map[string]any{"host": "dev-1"}, &s)
	if len(s) != 1 {
		t.Fatalf("dev-1 sees %d sessions", len(s))
	}
}

func TestFleetServerInfoFanout(t *testing.T) {
	e, _ := newFleetEnv(t)
	var info tools.ServerInfo
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

// TestFleetFanoutActions runs actions on several hosts in one call: the
// outcome of every host (one refused by its cap, one down), identical
// outputs grouped in the text, waves and max_failures, and the calls
// that never fan out.
func TestFleetFanoutActions(t *testing.T) {
	aud := &memAuditor{}
	e, _ := newFleetEnv(t, func(_ *testEnv, o *Options) { o.Auditor = aud })
	type fanout struct {
		Hosts   []HostOutcome `json:"hosts"`
		Summary FanoutSummary `json:"summary"`
	}
	var out fanout
	// One session name on every dev host (a comma-separated list).
	txt := e.ok("create_session", map[string]any{"host": "dev-1, dev-2", "session_name": "build"}, &out)
	if out.Summary.OK != 2 || !strings.Contains(txt, "2 hosts (dev-[1-2]): session build created") {
		t.Fatalf("create_session fan-out: %+v\n%s", out, txt)
	}
	txt = e.ok("run_command", map[string]any{"host": []any{"dev-1", "dev-2", "prod-1", "down-1"}, "session_name": "build", "command": "echo fan-$((40+2))", "timeout": 20}, &out)
	got := map[string]string{}
	for _, h := range out.Hosts {
		got[h.Host] = h.Outcome
	}
	want := map[string]string{"dev-1": "ok", "dev-2": "ok", "prod-1": "refused", "down-1": "error"}
	if fmt.Sprint(got) != fmt.Sprint(want) || out.Summary != (FanoutSummary{Hosts: 4, OK: 2, Error: 1, Refused: 1}) {
		t.Fatalf("outcomes %v summary %+v", got, out.Summary)
	}
	for _, frag := range []string{"run_command on 4 hosts: 2 ok, 1 failed, 1 refused", "2 hosts (dev-[1-2]): exit 0, 1 line\nfan-42\n", "1 host (prod-1): refused: ", "1 host (down-1): error: host \"down-1\""} {
		if !strings.Contains(txt, frag) {
			t.Errorf("grouped text lacks %q:\n%s", frag, txt)
		}
	}
	// One audit record per host, linked to the fan-out call.
	aud.mu.Lock()
	per := map[string]string{}
	for _, ev := range aud.evs {
		if ev.Tool == "run_command" && ev.Parent != "" {
			per[ev.Host] = ev.Parent + " " + ev.Outcome
		}
	}
	aud.mu.Unlock()
	if len(per) != 4 || per["dev-1"] != "run_command@dev-1,dev-2,prod-1,down-1 ok" || per["prod-1"] != "run_command@dev-1,dev-2,prod-1,down-1 refused" {
		t.Fatalf("per-host audit records %v", per)
	}
	// Waves of one host: down-1 fails first, max_failures 1 stops the rest.
	e.ok("send_keys", map[string]any{"host": []any{"down-1", "dev-1", "dev-2"}, "session_name": "build", "keys": "true", "serial": 1, "max_failures": 1}, &out)
	if out.Summary != (FanoutSummary{Hosts: 3, Error: 1, Skipped: 2}) || out.Hosts[1].Outcome != "skipped" {
		t.Fatalf("max_failures: %+v", out)
	}
	// Without max_failures every wave runs.
	txt = e.ok("send_keys", map[string]any{"host": "dev-*", "session_name": "build", "keys": "true", "serial": 1}, &out)
	if out.Summary.OK != 2 || !strings.Contains(txt, "2 hosts (dev-[1-2]): ok: Keys sent to pane %…") {
		t.Fatalf("serial: %+v\n%s", out, txt)
	}
	// Calls that never fan out.
	e.fail("kill_session", map[string]any{"host": "dev-*", "session_name": "build"}, "kill_session is destructive and never runs on several hosts at once")
	e.fail("run_command", map[string]any{"host": "dev-*", "pane_id": "%0", "command": "true"}, "pane_id names an object on one host")
	e.fail("select_window", map[string]any{"host": []any{"dev-1", "dev-2"}, "window_index": "0"}, "select_window runs on one host")
	e.fail("send_keys", map[string]any{"host": "dev-1,", "session_name": "build", "keys": "x"}, "an empty entry")
	e.fail("send_keys", map[string]any{"host": []any{}, "session_name": "build", "keys": "x"}, "at least 1 item")
	e.fail("send_keys", map[string]any{"host": "dev-1", "session_name": "build", "keys": "x", "serial": 0}, "greater than or equal to 1")
	// A listing accepts a list too.
	var s []SessionInfo
	e.result("list_sessions", map[string]any{"host": []any{"dev-1", "dev-2"}}, &s)
	if len(s) != 4 {
		t.Fatalf("list_sessions over a list: %d sessions", len(s))
	}
}

func TestCompactHosts(t *testing.T) {
	cases := []struct {
		in   []string
		want string
	}{
		{[]string{"dev-01", "dev-02", "dev-03", "dev-07"}, "dev-[01-03,07]"},
		{[]string{"dev-1", "dev-3"}, "dev-[1,3]"},
		{[]string{"a", "dev-1", "b"}, "dev-1, a, b"},
		{[]string{"x9", "x10", "x11"}, "x9, x[10-11]"},
		{[]string{"local"}, "local"},
	}
	for _, tc := range cases {
		if got := compactHosts(tc.in); got != tc.want {
			t.Errorf("compactHosts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
