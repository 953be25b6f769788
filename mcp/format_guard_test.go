package mcp

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/tmux"
)

// TestReadonlyCallsNeverRunCommands drives every readonly path that hands
// a caller's string to tmux's format expander (display_message, the
// option and hook names of show_option and show_hook, and the same
// inside call_readonly_tools_batch) at LIBTMUX_SAFETY=readonly with known
// bypasses and with formats generated from tmux's modifier grammar, and
// checks that no shell command ever ran (the marker never appears).
func TestReadonlyCallsNeverRunCommands(t *testing.T) {
	e := newEnv(t, withSettings(Settings{Safety: TierReadonly, SuppressHistory: true, WaitMax: 30}))
	pane := e.firstPane()
	marker := filepath.Join(t.TempDir(), "ran")
	job := "(touch " + marker + ")"
	pad := strings.Repeat("#{p9999:}", 200) // keeps tmux's client alive for the job
	bypasses := []string{
		"#" + job,
		"#{E:#{a:35}" + job + "}" + pad,
		"#{T:#{a:35}" + job + "}" + pad,
		"#{l:#" + job + "}",
		"#{S:#{E:#{a:35}" + job + "}}",
		"#{?pane_active,#{E:#{a:35}" + job + "},x}" + pad,
		"#{==:#{E:#{a:35}" + job + "},x}" + pad,
	}
	for _, f := range bypasses {
		res := e.call("display_message", map[string]any{"format_string": f, "pane_id": pane})
		if !res.IsError || !(strings.Contains(text(res), "format not allowed") || strings.Contains(text(res), "format jobs (#(...)) are not allowed")) {
			t.Errorf("display_message(%.50q) was not refused: %s", f, text(res))
		}
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"show_option", map[string]any{"option": f, "scope": "session", "global_": true}},
			{"show_hook", map[string]any{"hook_name": f, "scope": "session", "global_": true}},
		} {
			res := e.call(call.tool, call.args)
			if !res.IsError || !strings.Contains(text(res), "cannot contain '#'") {
				t.Errorf("%s(%.50q) was not refused: %s", call.tool, f, text(res))
			}
		}
		out, _ := e.batch("call_readonly_tools_batch", "continue",
			batchOp("display_message", map[string]any{"format_string": f, "pane_id": pane}),
			batchOp("show_option", map[string]any{"option": f, "scope": "session", "global_": true}),
			batchOp("show_hook", map[string]any{"hook_name": f, "scope": "session", "global_": true}))
		b, _ := json.Marshal(out)
		if strings.Count(string(b), `"success":false`) != 3 || strings.Count(string(b), "not allowed") < 6 {
			t.Errorf("batch with %.50q: %s", f, b)
		}
	}

	// Generated formats: whatever the allowlist accepts runs through the
	// tool without starting a process.
	frags := []string{"#", "##", "#{", "}", ",", ":", "(", ")", "#(", job, "#{a:35}", "#{E:", "#{T:", "#{S:",
		"#{l:", "#{?", "#{==:", "#{p9999:}", "#{=3:", "#{p5:", "pane_id", "pane_title", "#{pane_id}", "#S", "#,", "#{?pane_active,", "a"}
	r := rand.New(rand.NewPCG(7, 9))
	accepted := 0
	for range 1500 {
		var b strings.Builder
		for range 1 + r.IntN(7) {
			b.WriteString(frags[r.IntN(len(frags))])
		}
		f := b.String()
		if tmux.CheckFormat(f) != nil {
			continue
		}
		accepted++
		e.call("display_message", map[string]any{"format_string": f, "pane_id": pane})
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a readonly call ran a shell command")
	}
	if accepted == 0 {
		t.Fatal("no generated format was accepted; the test checks nothing")
	}
	t.Logf("%d bypasses refused on 4 paths; %d generated formats accepted and run without a process", len(bypasses), accepted)
}

// TestDisplayMessageLimits: over-long formats and huge padding are
// refused before tmux sees them.
func TestDisplayMessageLimits(t *testing.T) {
	e := newEnv(t, withSettings(Settings{Safety: TierReadonly, SuppressHistory: true, WaitMax: 30}))
	pane := e.firstPane()
	e.fail("display_message", map[string]any{"format_string": "#{S:" + strings.Repeat("#{p9999:}", 1000) + "}", "pane_id": pane}, "at most 1024 are allowed")
	e.fail("display_message", map[string]any{"format_string": "#{p9999:pane_id}", "pane_id": pane}, "at most 500 is allowed")
	if got := e.ok("display_message", map[string]any{"format_string": "#{p500:pane_id}|", "pane_id": pane}, nil); len(got) != 501 {
		t.Fatalf("padded output %d bytes", len(got))
	}
}
