package main

import (
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// paneInput is what get_pane_info and snapshot_pane add in fleet mode.
type paneInput struct {
	WaitingForInput *bool   `json:"waiting_for_input"`
	InputState      *string `json:"input_state"`
}

// TestInputStateEndToEnd drives the binary in fleet mode on a real sshd
// host: a read -p prompt on the host is reported waiting (the probe's
// script runs there, in the tool's own request), a sleep is not, and
// wait_for_text with stop_on_input ends as input on the prompt.
func TestInputStateEndToEnd(t *testing.T) {
	f := newJobsFleet(t)
	defer tmuxtest.Command("-L", f.sock, "kill-server").Run()
	c := f.start(nil)
	pane := func(session, shell string) string {
		var sess mcp.SessionInfo
		decodeInto(t, c.ok("create_session", map[string]any{"host": "dev-1", "session_name": session}), &sess)
		p := *sess.ActivePaneID
		c.ok("respawn_pane", map[string]any{"host": "dev-1", "pane_id": p, "kill": true, "shell": shell})
		return p
	}
	prompt := pane("prompt", `bash -c 'read -p "Proceed? [y/N] " x; sleep 60'`)
	busy := pane("busy", "sleep 60")

	cases := []struct {
		name, pane, state string
		waiting           bool
	}{
		{"read -p", prompt, "line", true},
		{"sleep", busy, "busy", false},
	}
	for _, tc := range cases {
		// Poll until the program reached its read or sleep (generous
		// bound; no timing asserted).
		var got paneInput
		deadline := time.Now().Add(20 * time.Second)
		for {
			got = paneInput{}
			decodeInto(t, c.ok("get_pane_info", map[string]any{"host": "dev-1", "pane_id": tc.pane}), &got)
			if got.InputState != nil && *got.InputState == tc.state || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got.InputState == nil || *got.InputState != tc.state || got.WaitingForInput == nil || *got.WaitingForInput != tc.waiting {
			t.Fatalf("%s: get_pane_info input_state %v waiting_for_input %v, want %s/%v", tc.name, deref(got.InputState), got.WaitingForInput, tc.state, tc.waiting)
		}
		var snap paneInput
		decodeInto(t, c.ok("snapshot_pane", map[string]any{"host": "dev-1", "pane_id": tc.pane}), &snap)
		if snap.InputState == nil || *snap.InputState != tc.state || snap.WaitingForInput == nil || *snap.WaitingForInput != tc.waiting {
			t.Fatalf("%s: snapshot_pane input_state %v waiting_for_input %v, want %s/%v", tc.name, deref(snap.InputState), snap.WaitingForInput, tc.state, tc.waiting)
		}
		var w mcp.WaitForTextResult
		decodeInto(t, c.ok("wait_for_text", map[string]any{"host": "dev-1", "pane_id": tc.pane, "patterns": []any{"never-printed"}, "stop_on_input": true, "timeout": 3}), &w)
		want := "timeout"
		if tc.waiting {
			want = "input"
		}
		if w.Outcome != want || w.Found {
			t.Fatalf("%s: wait_for_text stop_on_input outcome %q found %v, want %q", tc.name, w.Outcome, w.Found, want)
		}
		t.Logf("%s: wait_for_text stop_on_input ended %s after %.3f s", tc.name, w.Outcome, float64(w.ElapsedSeconds))
	}
}

func deref(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}
