package mcp

import (
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/mcp/tools"
)

func TestSendKeysBatchOrderAndErrors(t *testing.T) {
	e := shEnv(t)
	pane := e.firstPane()
	var r tools.SendKeysBatchResult
	e.ok("send_keys_batch", map[string]any{"operations": []any{
		map[string]any{"keys": "printf '%s_%s\\n' BATCH ONE", "pane_id": pane},
		map[string]any{"keys": "printf '%s_%s\\n' BATCH TWO", "session_name": "fixture"},
	}}, &r)
	if r.Succeeded != 2 || r.Failed != 0 || r.StoppedAt != nil || len(r.Results) != 2 {
		t.Fatalf("ordered batch: %+v", r)
	}
	for i, row := range r.Results {
		if row.Index != i || !row.Success || row.PaneID == nil || *row.PaneID != pane || row.Error != nil || row.ElapsedSeconds < 0 {
			t.Fatalf("row %d: %+v", i, row)
		}
	}
	waitFor(t, "both outputs in order", func() bool {
		s := e.shScreen(pane)
		i, j := strings.Index(s, "BATCH_ONE"), strings.Index(s, "BATCH_TWO")
		return i >= 0 && j > i
	})
	e.shSettle(pane)

	const hint = "Pane not found: Pane not found: %999\nCall list_panes to discover valid pane ids."
	r = tools.SendKeysBatchResult{}
	e.ok("send_keys_batch", map[string]any{"on_error": "continue", "operations": []any{
		map[string]any{"keys": "printf '%s_%s\\n' CONT A", "pane_id": pane},
		map[string]any{"keys": "echo never", "pane_id": "%999"},
		map[string]any{"keys": "printf '%s_%s\\n' CONT B", "pane_id": pane},
	}}, &r)
	if r.Succeeded != 2 || r.Failed != 1 || r.StoppedAt != nil || len(r.Results) != 3 {
		t.Fatalf("continue: %+v", r)
	}
	if bad := r.Results[1]; bad.Success || bad.PaneID != nil || bad.Error == nil || *bad.Error != hint {
		t.Fatalf("failed row: %+v", bad)
	}
	waitFor(t, "CONT_B", func() bool { return strings.Contains(e.shScreen(pane), "CONT_B") })
	e.shSettle(pane)

	r = tools.SendKeysBatchResult{}
	e.ok("send_keys_batch", map[string]any{"operations": []any{
		map[string]any{"keys": "printf '%s_%s\\n' STOP A", "pane_id": pane},
		map[string]any{"keys": "echo never", "window_id": "@999"},
		map[string]any{"keys": "printf '%s_%s\\n' STOP NEVER", "pane_id": pane},
	}}, &r)
	if r.Succeeded != 1 || r.Failed != 1 || r.StoppedAt == nil || *r.StoppedAt != 1 || len(r.Results) != 2 {
		t.Fatalf("stop: %+v", r)
	}
	if !strings.HasPrefix(*r.Results[1].Error, "Object not found: Could not find window_id=@999 for list-windows ()\nCall list_sessions") {
		t.Fatalf("stop row error: %q", *r.Results[1].Error)
	}
	e.shSettle(pane)
	if strings.Contains(e.shScreen(pane), "STOP_NEVER") || strings.Contains(e.shScreen(pane), "NEVER") {
		t.Fatal("an operation after the stop was sent")
	}

	e.fail("send_keys_batch", map[string]any{"operations": []any{}}, "operations must not be empty")
	for _, field := range []string{"pane", "pan_id"} {
		res := e.fail("send_keys_batch", map[string]any{"operations": []any{map[string]any{"keys": "secret-value", field: pane}}}, "operations.0."+field)
		if !strings.Contains(text(res), "extra_forbidden") || strings.Contains(text(res), "secret-value") {
			t.Fatalf("unknown field %s: %q", field, text(res))
		}
	}
}

func TestSendKeysBatchBytesAndTimeout(t *testing.T) {
	e := shEnv(t)
	catPane := e.tmux("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", e.firstPane(), "exec cat")
	ops := func(tag string) []any {
		return []any{
			map[string]any{"keys": tag + "-lit", "literal": true, "enter": false, "pane_id": catPane},
			map[string]any{"keys": "x", "suppress_history": true, "pane_id": catPane},
		}
	}
	for _, tc := range []struct {
		tag     string
		timeout any
	}{{"plain", nil}, {"bounded", 5}} {
		var r tools.SendKeysBatchResult
		e.ok("send_keys_batch", map[string]any{"operations": ops(tc.tag), "timeout": tc.timeout}, &r)
		if r.Succeeded != 2 || r.Failed != 0 {
			t.Fatalf("%s: %+v", tc.tag, r)
		}
		// cat shows the echoed line and its own copy: the suppression space
		// sits between the two operations' text and Enter was separate.
		want := tc.tag + "-lit x"
		waitFor(t, tc.tag+" bytes", func() bool {
			return strings.Count(e.shScreen(catPane), want+"\n") >= 1 && strings.Count(e.shScreen(catPane), want) == 2
		})
	}

	// An expired deadline fails the row with the timeout text and the
	// requested pane id.
	for _, timeout := range []float64{0, -1} {
		var r tools.SendKeysBatchResult
		e.ok("send_keys_batch", map[string]any{"timeout": timeout, "on_error": "continue", "operations": []any{
			map[string]any{"keys": "never", "pane_id": catPane},
			map[string]any{"keys": "never", "pane_id": "%4242"},
		}}, &r)
		want := "batch execution exceeded timeout of " + pyfmt.Float(timeout) + "s"
		if r.Succeeded != 0 || r.Failed != 2 || r.Results[1].PaneID == nil || *r.Results[1].PaneID != "%4242" || *r.Results[1].Error != want || r.Results[1].ElapsedSeconds != 0 {
			t.Fatalf("timeout %v: %+v", timeout, r)
		}
	}
	if strings.Contains(e.shScreen(catPane), "never") {
		t.Fatal("an operation past the deadline was sent")
	}
}
