package mcp

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/mcp/tools"
	"github.com/fleetmux/fleetmux/transport"
)

// inputFields is what get_pane_info and snapshot_pane add with the
// extensions on; present tells a null from a missing key.
type inputFields struct {
	WaitingForInput *bool   `json:"waiting_for_input"`
	InputState      *string `json:"input_state"`
}

// structured is a call's structuredContent as a map of raw values.
func (e *testEnv) structured(name string, args map[string]any) map[string]json.RawMessage {
	e.t.Helper()
	res := e.call(name, args)
	if res.IsError {
		e.t.Fatalf("%s(%v) failed: %s", name, args, text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		e.t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatalf("%s: decode %s: %v", name, b, err)
	}
	return m
}

// inputOf reads the two fields of a structured result (they must be
// there).
func inputOf(t *testing.T, name string, m map[string]json.RawMessage) inputFields {
	t.Helper()
	for _, k := range []string{"waiting_for_input", "input_state"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("%s: no %s in %v", name, k, m)
		}
	}
	var f inputFields
	_ = json.Unmarshal(m["waiting_for_input"], &f.WaitingForInput)
	_ = json.Unmarshal(m["input_state"], &f.InputState)
	return f
}

// TestPaneInputState: with the extensions on, get_pane_info and
// snapshot_pane say whether the pane's foreground program waits for
// input (real programs in panes of a private tmux server); wait_for_text
// with stop_on_input ends as input on a prompt and times out on a sleep.
func TestPaneInputState(t *testing.T) {
	e := newEnv(t, withExtensions(50, nil))
	shell := e.firstPane()
	_, password := e.paneNewWindow(`bash -c 'read -s -p "Password: " x; sleep 60'`)
	_, line := e.paneNewWindow(`bash -c 'read -p "Continue? [y/n] " x; sleep 60'`)
	_, busy := e.paneNewWindow("sleep 30")
	cases := []struct {
		name, pane, state string
		waiting           bool
	}{
		{"read -s prompt", password, "password", true},
		{"read -p prompt", line, "line", true},
		{"sleep", busy, "busy", false},
		{"shell prompt", shell, "shell", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"pane_id": c.pane}
			// The program needs a moment to reach its read: poll until
			// the state is the one expected (generous bound, no timing
			// asserted).
			var last inputFields
			deadline := time.Now().Add(15 * time.Second)
			for {
				last = inputOf(t, "get_pane_info", e.structured("get_pane_info", args))
				if last.InputState != nil && *last.InputState == c.state || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if last.InputState == nil || *last.InputState != c.state || last.WaitingForInput == nil || *last.WaitingForInput != c.waiting {
				t.Fatalf("get_pane_info: input_state %v waiting_for_input %v, want %s/%v", str(last.InputState), boolStr(last.WaitingForInput), c.state, c.waiting)
			}
			snap := inputOf(t, "snapshot_pane", e.structured("snapshot_pane", args))
			if snap.InputState == nil || *snap.InputState != c.state || snap.WaitingForInput == nil || *snap.WaitingForInput != c.waiting {
				t.Fatalf("snapshot_pane: input_state %v waiting_for_input %v, want %s/%v", str(snap.InputState), boolStr(snap.WaitingForInput), c.state, c.waiting)
			}
			if c.state == "shell" {
				return
			}
			var w tools.WaitForTextResult
			e.ok("wait_for_text", map[string]any{"pane_id": c.pane, "patterns": []any{"never-printed"}, "stop_on_input": true, "timeout": 2}, &w)
			want := "timeout"
			if c.waiting {
				want = "input"
			}
			if w.Outcome != want || w.Found {
				t.Fatalf("wait_for_text stop_on_input: outcome %q found %v, want %q", w.Outcome, w.Found, want)
			}
			// Without stop_on_input a prompt is waited on as before.
			e.ok("wait_for_text", map[string]any{"pane_id": c.pane, "patterns": []any{"never-printed"}, "timeout": 0.5}, &w)
			if w.Outcome != "timeout" {
				t.Fatalf("wait_for_text without stop_on_input: outcome %q, want timeout", w.Outcome)
			}
		})
	}
	// The other tools that answer a PaneInfo keep the reference's model.
	m := e.structured("set_pane_title", map[string]any{"pane_id": shell, "title": "t"})
	if _, ok := m["waiting_for_input"]; ok {
		t.Errorf("set_pane_title has waiting_for_input: %v", m)
	}
}

// TestPaneInputStatePlainLocal: without the extensions nothing changes:
// no fields, and stop_on_input is an unknown argument, refused as the
// reference refuses one.
func TestPaneInputStatePlainLocal(t *testing.T) {
	e := newEnv(t)
	pane := e.firstPane()
	for _, name := range []string{"get_pane_info", "snapshot_pane"} {
		m := e.structured(name, map[string]any{"pane_id": pane})
		for _, k := range []string{"waiting_for_input", "input_state"} {
			if _, ok := m[k]; ok {
				t.Errorf("%s in plain local mode has %s", name, k)
			}
		}
	}
	e.fail("wait_for_text", map[string]any{"pane_id": pane, "stop_on_input": true, "timeout": 1},
		"stop_on_input\n  Unexpected keyword argument [type=unexpected_keyword_argument]")
}

// TestPaneInputStateOneRequest: the probe rides in the tools' own
// request, so get_pane_info and snapshot_pane stay one round trip by id.
func TestPaneInputStateOneRequest(t *testing.T) {
	cr := &countingRunner{next: transport.NewLocal()}
	e := newEnv(t, withExtensions(50, nil), func(_ *testEnv, o *Options) { o.Backend = &localBackend{r: cr} })
	pane := e.firstPane()
	for _, name := range []string{"get_pane_info", "snapshot_pane"} {
		before := cr.n.Load()
		f := inputOf(t, name, e.structured(name, map[string]any{"pane_id": pane}))
		if got := cr.n.Load() - before; got != 1 {
			t.Errorf("%s: %d tmux requests, want 1", name, got)
		}
		if f.InputState == nil {
			t.Errorf("%s: input_state null", name)
		}
	}
	// By session name: the lookup, then the read with the probe.
	before := cr.n.Load()
	inputOf(t, "get_pane_info", e.structured("get_pane_info", map[string]any{"session_name": "fixture"}))
	if got := cr.n.Load() - before; got > 2 {
		t.Errorf("get_pane_info by session: %d tmux requests, want at most 2", got)
	}
}

func str(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

func boolStr(p *bool) string {
	if p == nil {
		return "null"
	}
	if *p {
		return "true"
	}
	return "false"
}
