package mcp

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/tools"
)

func TestCaptureSinceFlow(t *testing.T) {
	e := shEnv(t)
	pane := e.firstPane()
	e.shSync(pane, "printf '%s_%s\\n' CS FIRST")

	var first tools.CaptureSinceResult
	e.ok("capture_since", map[string]any{"pane_id": pane}, &first)
	if first.PaneID != pane || !strings.HasPrefix(first.Cursor, "capture-since-v1:") || first.LinesMissed || first.Truncated || !anyContains(first.Lines, "CS_FIRST") {
		t.Fatalf("first call: %+v", first)
	}
	if strings.Contains(first.Cursor, "=") {
		t.Fatalf("cursor keeps base64 padding: %s", first.Cursor)
	}

	e.shSync(pane, "printf '%s_%s\\n' CS SECOND")
	var second tools.CaptureSinceResult
	e.ok("capture_since", map[string]any{"cursor": first.Cursor}, &second)
	if second.PaneID != pane || second.LinesMissed || !anyContains(second.Lines, "CS_SECOND") || anyContains(second.Lines, "CS_FIRST") {
		t.Fatalf("follow-up: %+v", second)
	}

	var third tools.CaptureSinceResult
	e.ok("capture_since", map[string]any{"cursor": second.Cursor, "pane_id": pane}, &third)
	if len(third.Lines) != 0 || third.LinesMissed || third.Cursor == "" {
		t.Fatalf("third call: %+v", third)
	}

	// Output that scrolls the reference into history is still an exact delta.
	e.shSync(pane, "i=0; while [ $i -lt 40 ]; do i=$((i+1)); printf 'SCROLL_%02d\\n' $i; done")
	var fourth tools.CaptureSinceResult
	e.ok("capture_since", map[string]any{"cursor": third.Cursor}, &fourth)
	if fourth.LinesMissed || !anyContains(fourth.Lines, "SCROLL_01") || !anyContains(fourth.Lines, "SCROLL_40") || anyContains(fourth.Lines, "CS_SECOND") {
		t.Fatalf("scrolled delta: missed=%v lines=%q", fourth.LinesMissed, fourth.Lines)
	}

	// Limits keep the newest lines without an in-band marker.
	var lim tools.CaptureSinceResult
	e.ok("capture_since", map[string]any{"pane_id": pane, "max_lines": 2}, &lim)
	if len(lim.Lines) != 2 || !lim.Truncated || lim.TruncatedLines < 1 || lim.TruncatedBytes <= 0 {
		t.Fatalf("max_lines=2: %+v", lim)
	}
	e.ok("capture_since", map[string]any{"pane_id": pane, "max_bytes": 32}, &lim)
	if !lim.Truncated || lim.TruncatedBytes <= 0 || tools.JoinedSize(lim.Lines) > 32 {
		t.Fatalf("max_bytes=32: %+v", lim)
	}

	// clear-history destroys the reference: visible content, lines_missed, new cursor.
	e.tmux("clear-history", "-t", pane)
	var missed tools.CaptureSinceResult
	e.ok("capture_since", map[string]any{"cursor": fourth.Cursor}, &missed)
	if !missed.LinesMissed || missed.Cursor == fourth.Cursor || !anyContains(missed.Lines, "SCROLL_40") {
		t.Fatalf("after clear-history: %+v", missed)
	}

	// A cursor for another pane is refused; so is a respawned pane.
	other := e.tmux("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", pane)
	e.fail("capture_since", map[string]any{"cursor": missed.Cursor, "pane_id": other}, "cursor pane "+pane+" does not match requested pane "+other)
	e.shRespawn(pane)
	e.fail("capture_since", map[string]any{"cursor": missed.Cursor}, "pane "+pane+" was respawned (pid ")
}

func TestCaptureSinceErrors(t *testing.T) {
	e := newEnv(t)
	pane := e.firstPane()
	enc := func(s string) string { return "capture-since-v1:" + base64.RawURLEncoding.EncodeToString([]byte(s)) }
	good := `"below_hashes":[],"history_size":0,"pane_height":24,"anchor_abs":0,"anchor_hash":null`
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"max_lines": 0}, "max_lines must be positive or None (received 0)"},
		{map[string]any{"max_bytes": -5}, "max_bytes must be positive or None (received -5)"},
		{map[string]any{"cursor": "bogus"}, "invalid capture_since cursor: unsupported cursor format"},
		{map[string]any{"cursor": "capture-since-v1:!!!!x"}, "invalid capture_since cursor: could not decode payload"},
		{map[string]any{"cursor": enc("{not json")}, "invalid capture_since cursor: could not decode payload"},
		{map[string]any{"cursor": enc("[1,2]")}, "invalid capture_since cursor: payload is not an object"},
		{map[string]any{"cursor": enc(`{"version":2}`)}, "invalid capture_since cursor: unsupported cursor version"},
		{map[string]any{"cursor": enc(`{"version":1,"anchor_hash":5,"below_hashes":[]}`)}, "invalid capture_since cursor: missing or invalid anchor_hash"},
		{map[string]any{"cursor": enc(`{"version":1,"below_hashes":[1]}`)}, "invalid capture_since cursor: missing or invalid below_hashes"},
		{map[string]any{"cursor": enc(`{"version":1,` + good + `,"pane_pid":"1"}`)}, "invalid capture_since cursor: missing or invalid pane_id"},
		{map[string]any{"cursor": enc(`{"version":1,` + good + `,"pane_id":"%0","pane_pid":""}`)}, "invalid capture_since cursor: missing or invalid pane_pid"},
		{map[string]any{"cursor": enc(`{"version":1,"below_hashes":[],"pane_id":"%0","pane_pid":"1","history_size":true}`)}, "invalid capture_since cursor: missing or invalid history_size"},
		{map[string]any{"cursor": enc(`{"version":1,"below_hashes":[],"pane_id":"%0","pane_pid":"1","history_size":0,"pane_height":-1}`)}, "invalid capture_since cursor: missing or invalid pane_height"},
		{map[string]any{"cursor": enc(`{"version":1,"below_hashes":[],"pane_id":"%0","pane_pid":"1","history_size":0,"pane_height":1,"anchor_abs":1.5}`)}, "invalid capture_since cursor: missing or invalid anchor_abs"},
		{map[string]any{"cursor": enc(`{"version":1,` + good + `,"pane_id":"%77","pane_pid":"1"}`)}, "Pane not found: Pane not found: %77"},
		{map[string]any{"cursor": enc(`{"version":1,` + good + `,"pane_id":"%77","pane_pid":"1"}`), "pane_id": pane}, "cursor pane %77 does not match requested pane " + pane},
		{map[string]any{"cursor": enc(`{"version":true,` + good + `,"pane_id":"` + pane + `","pane_pid":"1"}`)}, "pane " + pane + " was respawned (pid 1 -> "},
	} {
		e.fail("capture_since", tc.args, tc.want)
	}
}
