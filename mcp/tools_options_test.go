package mcp

import (
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/tools"
)

func TestOptionShowAndSet(t *testing.T) {
	e := newEnv(t)
	var r tools.OptionResult
	e.ok("show_option", map[string]any{"option": "base-index", "scope": "session", "global_": true}, &r)
	if r.Option != "base-index" || r.Value != float64(0) {
		t.Fatalf("base-index = %+v", r)
	}
	var set tools.OptionSetResult
	e.ok("set_option", map[string]any{"option": "display-time", "value": "3000", "scope": "server", "global_": true}, &set)
	if set != (tools.OptionSetResult{Option: "display-time", Value: "3000", Status: "set"}) {
		t.Fatalf("set_option = %+v", set)
	}
	if got := e.tmux("show-options", "-g", "-s", "display-time"); got != "display-time 3000" {
		t.Fatalf("tmux sees %q", got)
	}

	// Conversion: on/off → booleans, other text unchanged.
	e.ok("show_option", map[string]any{"option": "mouse", "scope": "session", "global_": true}, &r)
	if r.Value != false {
		t.Fatalf("mouse = %#v", r.Value)
	}
	e.ok("set_option", map[string]any{"option": "status-left", "value": "[#S] ", "scope": "session", "target": "fixture"}, nil)
	e.ok("show_option", map[string]any{"option": "status-left", "scope": "session", "target": "fixture"}, &r)
	if r.Value != "[#S] " {
		t.Fatalf("status-left = %#v", r.Value)
	}
	// Array options come back as an index-keyed object.
	e.tmux("set-option", "-g", "update-environment[7]", "FOO")
	e.ok("show_option", map[string]any{"option": "update-environment", "scope": "session", "global_": true}, &r)
	arr, ok := r.Value.(map[string]any)
	if !ok || arr["7"] != "FOO" || arr["0"] != "DISPLAY" {
		t.Fatalf("update-environment = %#v", r.Value)
	}
	// Window and pane targets resolve by id; an inherited value is found.
	pane := e.firstPane()
	win := e.tmux("display-message", "-p", "-t", pane, "#{window_id}")
	e.ok("set_option", map[string]any{"option": "@fm_test", "value": "42", "scope": "window", "target": win}, nil)
	e.ok("show_option", map[string]any{"option": "@fm_test", "scope": "window", "target": win}, &r)
	if r.Value != float64(42) {
		t.Fatalf("@fm_test = %#v", r.Value)
	}
	// An option with nothing set at that level prints nothing: null.
	e.ok("show_option", map[string]any{"option": "pane-border-format", "scope": "window", "target": win}, &r)
	if r.Value != nil {
		t.Fatalf("unset window option = %#v", r.Value)
	}
	e.ok("set_option", map[string]any{"option": "@fm_pane", "value": "on", "scope": "pane", "target": pane}, nil)
	e.ok("show_option", map[string]any{"option": "@fm_pane", "scope": "pane", "target": pane}, &r)
	if r.Value != true {
		t.Fatalf("@fm_pane = %#v", r.Value)
	}

	e.fail("show_option", map[string]any{"option": "base-index", "target": "fixture"}, "scope is required when target is specified")
	e.fail("show_option", map[string]any{"option": "base-index", "scope": "session", "target": "nope"}, "Object not found: Could not find session_name=nope")
	e.fail("show_option", map[string]any{"option": "no-such-option", "scope": "session", "global_": true}, "tmux error: invalid option: no-such-option")
	e.fail("set_option", map[string]any{"option": "no-such-option", "value": "1", "scope": "session", "global_": true}, "tmux error: invalid option: no-such-option")
}

func TestOptionInvalidScopeDirect(t *testing.T) {
	// The schema's enum stops bad scopes on the wire; the handler still
	// refuses them when called directly (the reference's test uses scope "global").
	e := newEnv(t)
	c := e.srv.newCall(e.srv.byName["show_option"], map[string]any{"option": "base-index", "scope": "global"}, LocalHost, nil, "")
	_, err := e.srv.byName["show_option"].def.Handle.Handle(t.Context(), c)
	if err == nil || err.Error() != "Invalid scope: 'global'. Valid: pane, server, session, window" {
		t.Fatalf("err = %v", err)
	}
	c.Args = map[string]any{"scope": "cluster"}
	if _, err := e.srv.byName["show_hooks"].def.Handle.Handle(t.Context(), c); err == nil || !strings.Contains(err.Error(), "Invalid scope: 'cluster'") {
		t.Fatalf("show_hooks err = %v", err)
	}
}

func TestEnvironmentTools(t *testing.T) {
	e := newEnv(t)
	var env struct {
		Variables map[string]any `json:"variables"`
	}
	e.ok("show_environment", nil, &env)
	if env.Variables == nil {
		t.Fatal("no variables object")
	}
	var set tools.EnvironmentSetResult
	e.ok("set_environment", map[string]any{"name": "MCP_ROUND_TRIP", "value": "hello world"}, &set)
	if set != (tools.EnvironmentSetResult{Name: "MCP_ROUND_TRIP", Value: "hello world", Status: "set"}) {
		t.Fatalf("set = %+v", set)
	}
	e.ok("show_environment", nil, &env)
	if env.Variables["MCP_ROUND_TRIP"] != "hello world" {
		t.Fatalf("global env lacks the variable: %v", env.Variables["MCP_ROUND_TRIP"])
	}

	// Per session, by name or id; "-NAME" lines are keyed as printed.
	e.ok("set_environment", map[string]any{"name": "SESS_ONLY", "value": "1", "session_name": "fixture"}, nil)
	e.tmux("set-environment", "-t", "fixture", "-r", "GONE")
	sid := e.tmux("display-message", "-p", "-t", "fixture", "#{session_id}")
	env.Variables = nil
	e.ok("show_environment", map[string]any{"session_id": sid}, &env)
	if env.Variables["SESS_ONLY"] != "1" || env.Variables["-GONE"] != true {
		t.Fatalf("session env = %v", env.Variables)
	}
	if _, ok := env.Variables["MCP_ROUND_TRIP"]; ok {
		t.Fatal("session env shows a global variable")
	}
	e.fail("show_environment", map[string]any{"session_name": "nope"}, "Object not found")

	res := e.fail("set_environment", map[string]any{"name": "", "value": "x"}, "Unexpected error: ValueError: tmux set-environment stderr: ['empty variable name']")
	if res.Meta["error_type"] != "ValueError" || res.Meta["expected"] != false {
		t.Fatalf("meta = %v", res.Meta)
	}
}

func TestHookTools(t *testing.T) {
	e := newEnv(t)
	var hooks tools.HookListResult
	e.ok("show_hooks", map[string]any{"scope": "session", "target": "fixture"}, &hooks)
	if hooks.Entries == nil {
		t.Fatal("entries missing")
	}

	// A hook set on the session is found; set-then-unset yields [].
	e.tmux("set-hook", "-t", "fixture", "pane-exited", "display-message MCP_HOOK_TEST")
	e.ok("show_hook", map[string]any{"hook_name": "pane-exited", "scope": "session", "target": "fixture"}, &hooks)
	if len(hooks.Entries) != 1 || hooks.Entries[0].HookName != "pane-exited" || hooks.Entries[0].Index == nil || *hooks.Entries[0].Index != 0 || hooks.Entries[0].Command != "display-message MCP_HOOK_TEST" {
		t.Fatalf("show_hook = %+v", hooks.Entries)
	}
	e.ok("show_hook", map[string]any{"hook_name": "pane-exited[0]", "scope": "session", "target": "fixture"}, &hooks)
	if len(hooks.Entries) != 1 || hooks.Entries[0].HookName != "pane-exited" || *hooks.Entries[0].Index != 0 {
		t.Fatalf("indexed show_hook = %+v", hooks.Entries)
	}
	e.tmux("set-hook", "-u", "-t", "fixture", "pane-exited")
	res := e.call("show_hook", map[string]any{"hook_name": "pane-exited", "scope": "session", "target": "fixture"})
	if res.IsError || !strings.Contains(text(res), `"entries":[]`) {
		t.Fatalf("unset hook: %s", text(res))
	}
	// The session scope without a target hands tmux an empty argument,
	// which it answers with "too many arguments": an empty list.
	e.ok("show_hook", map[string]any{"hook_name": "pane-exited", "scope": "session"}, &hooks)
	if len(hooks.Entries) != 0 {
		t.Fatalf("scope-only session hook = %+v", hooks.Entries)
	}
	e.fail("show_hook", map[string]any{"hook_name": "after-nonexistent-hook-cxyz", "scope": "session", "target": "fixture"}, "invalid option")

	// -g pane-level hooks live in the global window tree; show_hooks
	// (scope=server) merges it so it agrees with show_hook.
	e.tmux("set-hook", "-g", "pane-focus-in", "display-message xfail_probe")
	e.tmux("set-hook", "-g", "session-closed[3]", "display-message SESS")
	if !strings.Contains(e.tmux("show-hooks", "-gw"), "pane-focus-in[") || strings.Contains(e.tmux("show-hooks", "-g"), "pane-focus-in") {
		t.Fatal("tmux no longer splits global hooks across -g and -gw")
	}
	e.ok("show_hook", map[string]any{"hook_name": "pane-focus-in", "scope": "server"}, &hooks)
	if len(hooks.Entries) != 1 || hooks.Entries[0].Command != "display-message xfail_probe" {
		t.Fatalf("show_hook server = %+v", hooks.Entries)
	}
	e.ok("show_hooks", map[string]any{"scope": "server"}, &hooks)
	var names []string
	found := map[string]tools.HookEntry{}
	for _, h := range hooks.Entries {
		names = append(names, h.HookName)
		found[h.HookName] = h
	}
	if h, ok := found["pane-focus-in"]; !ok || h.Command != "display-message xfail_probe" {
		t.Fatalf("show_hooks(server) misses pane-focus-in: %v", names)
	}
	if h, ok := found["session-closed"]; !ok || h.Index == nil || *h.Index != 3 {
		t.Fatalf("session-closed entry = %+v", h)
	}
	for i := 1; i < len(hooks.Entries); i++ {
		if hooks.Entries[i-1].HookName > hooks.Entries[i].HookName {
			t.Fatalf("entries not sorted: %v", names)
		}
	}
	e.fail("show_hooks", map[string]any{"target": "somesession"}, "scope is required when target is specified")
}
