package mcp

import (
	"strings"
	"testing"
)

// TestFleetBatchHost: every operation of a batch without a host of its
// own runs on the batch's host (a null host too); one that names a host
// runs there after that host's gate; tools without a host parameter
// (list_hosts) run in a batch on any host; each nested audit record names
// the host the operation ran on.
func TestFleetBatchHost(t *testing.T) {
	aud := &memAuditor{}
	e, dirs := newFleetEnv(t, func(_ *testEnv, o *Options) { o.Auditor = aud })
	set := func(value string, host any) map[string]any {
		args := map[string]any{"option": "@i19b", "value": value, "global_": true}
		if host != "" {
			args["host"] = host
		}
		return map[string]any{"tool": "set_option", "arguments": args}
	}
	var out batchOut
	e.ok("call_mutating_tools_batch", map[string]any{"host": "dev-1", "on_error": "continue", "operations": []any{
		set("inherited", ""),
		set("to-dev-2", "dev-2"),
		set("to-prod-1", "prod-1"),
		map[string]any{"tool": "list_hosts", "arguments": map[string]any{}},
	}}, &out)
	if out.Succeeded != 3 || out.Failed != 1 || out.Results[2].Error == nil || !strings.Contains(*out.Results[2].Error, "capped at readonly") {
		t.Fatalf("batch rows %+v", out)
	}
	for h, want := range map[string]string{"dev-1": "inherited", "dev-2": "to-dev-2", "prod-1": ""} {
		if got := hostOption(t, dirs[h], "@i19b"); got != want {
			t.Errorf("%s: @i19b = %q, want %q", h, got, want)
		}
	}
	e.ok("call_mutating_tools_batch", map[string]any{"host": "dev-2", "operations": []any{set("null-host", nil)}}, &out)
	if got := hostOption(t, dirs["dev-2"], "@i19b"); got != "null-host" {
		t.Errorf("an operation with host null: dev-2 @i19b = %q", got)
	}
	aud.mu.Lock()
	defer aud.mu.Unlock()
	var nested []string
	for _, ev := range aud.evs {
		if ev.Parent != "" {
			nested = append(nested, ev.Tool+"@"+ev.Host+" "+ev.Outcome)
		}
	}
	want := "set_option@dev-1 ok,set_option@dev-2 ok,set_option@prod-1 refused,list_hosts@local ok,set_option@dev-2 ok"
	if strings.Join(nested, ",") != want {
		t.Fatalf("nested audit records %v, want %s", nested, want)
	}
}

// TestBatchRefusalAudited: an operation the batch itself refuses (a tier
// above the batch's, a nested batch, a self-bounded tool, an unknown
// tool) has an audit record of its own under the batch, on the batch's
// host, with the outcome the same call made directly gets.
func TestBatchRefusalAudited(t *testing.T) {
	aud := &memAuditor{}
	e, _ := newFleetEnv(t, func(_ *testEnv, o *Options) { o.Auditor = aud })
	op := func(tool string) map[string]any {
		return map[string]any{"tool": tool, "arguments": map[string]any{}}
	}
	var out batchOut
	e.ok("call_readonly_tools_batch", map[string]any{"host": "dev-2", "on_error": "continue", "operations": []any{
		op("kill_server"), op("call_readonly_tools_batch"), op("wait_for_text"), op("no_such_tool"), op("list_sessions"),
	}}, &out)
	if out.Failed != 4 || out.Succeeded != 1 {
		t.Fatalf("batch rows %+v", out)
	}
	aud.mu.Lock()
	defer aud.mu.Unlock()
	var nested []string
	for _, ev := range aud.evs {
		if ev.Parent == "call_readonly_tools_batch" {
			nested = append(nested, ev.Tool+"@"+ev.Host+" "+ev.Outcome)
		}
	}
	want := "kill_server@dev-2 refused,call_readonly_tools_batch@dev-2 refused,wait_for_text@dev-2 refused,no_such_tool@dev-2 error,list_sessions@dev-2 ok"
	if strings.Join(nested, ",") != want {
		t.Fatalf("nested audit records %v, want %s", nested, want)
	}
}
