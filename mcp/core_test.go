package mcp

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// Review of the server, session and window tools against libtmux-mcp
// 0.1.0a20 on libtmux 0.62: filters, serialisation of empty values,
// linked windows, argument edge cases and pydantic 2.13 validation texts.

// fixtureWindow returns the id and name of the fixture session's window.
func (e *testEnv) fixtureWindow() (string, string) {
	f := strings.SplitN(e.tmux("display-message", "-p", "-t", "fixture:", "#{window_id} #{window_name}"), " ", 2)
	return f[0], f[1]
}

func TestFilterOperators(t *testing.T) {
	e := newEnv(t)
	count := func(tool string, filters any) int {
		t.Helper()
		var rows []map[string]any
		e.result(tool, map[string]any{"filters": filters}, &rows)
		return len(rows)
	}
	// libtmux's `in` tests whether the filter value occurs in the
	// attribute (rhs in data), `nin` the opposite.
	if n := count("list_sessions", map[string]any{"session_name__in": "fix"}); n != 1 {
		t.Fatalf("session_name__in fix: %d rows", n)
	}
	if n := count("list_sessions", map[string]any{"session_name__in": "fixture-and-more"}); n != 0 {
		t.Fatalf("session_name__in superstring: %d rows", n)
	}
	if n := count("list_sessions", map[string]any{"session_name__nin": "fix"}); n != 0 {
		t.Fatalf("session_name__nin fix: %d rows", n)
	}
	// The JSON-text form can carry lists (membership) and non-strings
	// (which never equal a tmux value).
	if n := count("list_sessions", `{"session_name__in": ["x", "fixture"]}`); n != 1 {
		t.Fatalf("__in list: %d rows", n)
	}
	if n := count("list_sessions", `{"session_name__nin": ["fixture"]}`); n != 0 {
		t.Fatalf("__nin list: %d rows", n)
	}
	if n := count("list_sessions", `{"session_windows": 1}`); n != 0 {
		t.Fatalf("integer value: %d rows", n)
	}
	if n := count("list_sessions", `{"session_windows": "1"}`); n != 1 {
		t.Fatalf("string value: %d rows", n)
	}
}

func TestFilterFields(t *testing.T) {
	e := newEnv(t)
	wid, wname := e.fixtureWindow()
	count := func(tool string, filters any) int {
		t.Helper()
		var rows []map[string]any
		e.result(tool, map[string]any{"filters": filters}, &rows)
		return len(rows)
	}
	// A session row carries its active window's and pane's variables,
	// including ones outside the serialised model.
	if n := count("list_sessions", map[string]any{"window_id": wid}); n != 1 {
		t.Fatalf("session by window_id: %d", n)
	}
	if n := count("list_sessions", map[string]any{"pane_current_command__regex": "bash"}); n != 1 {
		t.Fatalf("session by pane_current_command: %d", n)
	}
	if n := count("list_panes", map[string]any{"pane_start_path__startswith": "/"}); n != 1 {
		t.Fatalf("pane_start_path: %d", n)
	}
	// libtmux's short property names.
	if n := count("list_windows", map[string]any{"name": wname}); n != 1 {
		t.Fatalf("window name alias: %d", n)
	}
	if n := count("list_sessions", map[string]any{"name__icontains": "FIX"}); n != 1 {
		t.Fatalf("session name alias: %d", n)
	}
	if n := count("list_panes", map[string]any{"id__startswith": "%"}); n != 1 {
		t.Fatalf("pane id alias: %d", n)
	}
	if n := count("list_panes", map[string]any{"at_top": "1"}); n != 0 {
		t.Fatalf("a boolean property never matches: %d", n)
	}
	// A path segment that is not an attribute is skipped.
	if n := count("list_panes", map[string]any{"window__window_name__exact": wname}); n != 1 {
		t.Fatalf("nested path: %d", n)
	}
	// Relations switch the object the short names refer to.
	if n := count("list_windows", map[string]any{"session__name__exact": "fixture"}); n != 1 {
		t.Fatalf("window session__name: %d", n)
	}
	if n := count("list_sessions", map[string]any{"active_window__name__exact": wname}); n != 1 {
		t.Fatalf("session active_window__name: %d", n)
	}
	if n := count("list_sessions", map[string]any{"windows__contains": "x"}); n != 0 {
		t.Fatalf("a collection never matches: %d", n)
	}
	// Not a libtmux attribute: never matches.
	if n := count("list_panes", map[string]any{"alternate_on": "0"}); n != 0 {
		t.Fatalf("alternate_on: %d", n)
	}
	// An empty tmux value is absent in libtmux and matches nothing, not
	// even nin.
	e.tmux("rename-window", "-t", wid, "")
	if n := count("list_windows", map[string]any{"window_name": ""}); n != 0 {
		t.Fatalf("empty name exact: %d", n)
	}
	if n := count("list_windows", map[string]any{"window_name__nin": "zzz"}); n != 0 {
		t.Fatalf("empty name nin: %d", n)
	}
}

func TestEmptyValuesAreNull(t *testing.T) {
	e := newEnv(t)
	wid, _ := e.fixtureWindow()
	var w WindowInfo
	e.ok("rename_window", map[string]any{"window_id": wid, "new_name": ""}, &w)
	if w.WindowName == nil || *w.WindowName != "" {
		t.Fatalf("rename_window keeps the name it set: %+v", w.WindowName)
	}
	e.ok("get_window_info", map[string]any{"window_id": wid}, &w)
	if w.WindowName != nil {
		t.Fatalf("an empty tmux value serialises as null, got %q", *w.WindowName)
	}
	var ws []WindowInfo
	e.result("list_windows", map[string]any{"session_name": "fixture"}, &ws)
	if len(ws) != 1 || ws[0].WindowName != nil {
		t.Fatalf("list_windows %+v", ws)
	}
}

func TestCreateSessionArgs(t *testing.T) {
	e := newEnv(t)
	var s SessionInfo
	e.ok("create_session", map[string]any{"session_name": "blank", "window_name": ""}, &s)
	if name := e.tmux("display-message", "-p", "-t", "blank:", "#{window_name}"); name == "" {
		t.Fatal("an empty window_name must be dropped (tmux names the window), got an empty name")
	}
	res := e.fail("create_session", map[string]any{"session_name": ""}, "Bad session name: empty (session name: )")
	if res.Meta["error_type"] != "BadSessionName" || res.Meta["expected"] != true {
		t.Fatalf("meta %v", res.Meta)
	}
	e.fail("rename_session", map[string]any{"session_name": "blank", "new_name": ""}, "Bad session name: empty (session name: )")
}

func TestWindowArgs(t *testing.T) {
	e := newEnv(t)
	wid, _ := e.fixtureWindow()

	// An empty destination_session means the window's own session.
	var w WindowInfo
	e.ok("move_window", map[string]any{"window_id": wid, "destination_index": "5", "destination_session": ""}, &w)
	if *w.WindowIndex != "5" || *w.SessionName != "fixture" {
		t.Fatalf("move_window %+v", w)
	}

	// An empty shell runs the default command, not an empty one.
	var p PaneInfo
	e.ok("split_window", map[string]any{"window_id": wid, "shell": ""}, &p)
	if dead := e.tmux("display-message", "-p", "-t", p.PaneID, "#{pane_dead}"); dead != "0" {
		t.Fatalf("pane started with an empty shell is dead=%s", dead)
	}

	// select_layout reports the window as resolved before the change
	// (libtmux does not refresh); an empty layout re-applies the last one.
	before := e.tmux("display-message", "-p", "-t", wid, "#{window_layout}")
	e.ok("select_layout", map[string]any{"window_id": wid, "layout": "even-horizontal"}, &w)
	after := e.tmux("display-message", "-p", "-t", wid, "#{window_layout}")
	if before == after || *w.WindowLayout != before {
		t.Fatalf("select_layout result layout %q, before %q, after %q", *w.WindowLayout, before, after)
	}
	e.ok("select_layout", map[string]any{"window_id": wid, "layout": ""}, &w)
	if *w.WindowLayout != after {
		t.Fatalf("empty layout result %q, want %q", *w.WindowLayout, after)
	}
}

func TestLinkedWindows(t *testing.T) {
	e := newEnv(t)
	wid, _ := e.fixtureWindow()
	e.tmux("new-session", "-d", "-s", "other")
	e.tmux("link-window", "-s", wid, "-t", "other:7")

	// By id the window is ambiguous (one row per session that links it).
	res := e.fail("get_window_info", map[string]any{"window_id": wid}, "Ambiguous target: Multiple objects returned (2): window_id='"+wid+"'\nA window shared")
	if res.Meta["error_type"] != "MultipleObjectsReturned" {
		t.Fatalf("meta %v", res.Meta)
	}
	// By session and index it is not, and the refreshed result is read
	// the way libtmux refreshes (list-windows -t), not by a server-wide id
	// lookup that would be ambiguous.
	var w WindowInfo
	e.ok("rename_window", map[string]any{"session_name": "other", "window_index": "7", "new_name": "shared"}, &w)
	if w.WindowID != wid || *w.WindowName != "shared" {
		t.Fatalf("rename_window %+v", w)
	}
	e.ok("resize_window", map[string]any{"session_name": "other", "window_index": "7", "width": 70, "height": 20}, &w)
	if w.WindowID != wid {
		t.Fatalf("resize_window %+v", w)
	}
	var p PaneInfo
	e.ok("split_window", map[string]any{"session_name": "other", "window_index": "7"}, &p)
	if p.WindowID == nil || *p.WindowID != wid {
		t.Fatalf("split_window %+v", p)
	}

	// Linked twice into one session: two winlinks, still ambiguous for
	// pane tools that take window_id.
	e.tmux("link-window", "-s", wid, "-t", "fixture:9")
	e.fail("get_pane_info", map[string]any{"window_id": wid}, "Ambiguous target: Multiple objects returned (3): window_id='"+wid+"'")
}

func TestKillGuardLinkedCallerPane(t *testing.T) {
	e := newEnv(t)
	wid, _ := e.fixtureWindow()
	pane := e.firstPane()
	sock := e.tmux("display-message", "-p", "#{socket_path}")
	e.tmux("new-session", "-d", "-s", "other")
	e.tmux("link-window", "-s", wid, "-t", "other:7")
	e.setVar("TMUX", sock+",1,$0")
	e.setVar("TMUX_PANE", pane)
	// The caller's pane is listed once per session: the reference's guard
	// lookup fails as ambiguous instead of letting the kill through.
	e.fail("kill_session", map[string]any{"session_name": "other"}, "Ambiguous target: Multiple objects returned (2): pane_id='"+pane+"'")
	e.fail("kill_window", map[string]any{"window_id": wid}, "Ambiguous target: Multiple objects returned (2): window_id='"+wid+"'")
	if out := e.tmux("has-session", "-t", "=other"); out != "" {
		t.Fatalf("has-session: %s", out)
	}
}

func TestValidationTexts(t *testing.T) {
	e := newEnv(t)
	// Texts and type codes as pydantic 2.13 renders them for call[...].
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"split_window", map[string]any{"direction": 3},
			"1 validation error for call[split_window]\ndirection\n  Input should be 'above', 'below', 'left' or 'right' [type=literal_error]"},
		{"call_readonly_tools_batch", map[string]any{"operations": []any{map[string]any{"tool": "list_sessions"}}, "on_error": nil},
			"1 validation error for call[call_readonly_tools_batch]\non_error\n  Input should be 'stop' or 'continue' [type=literal_error]"},
		{"create_session", map[string]any{"suppress_persistent_history": " yes"},
			"1 validation error for call[create_session]\nsuppress_persistent_history\n  Input should be a valid boolean, unable to interpret input [type=bool_parsing]"},
		{"create_session", map[string]any{"suppress_persistent_history": 0.5},
			"1 validation error for call[create_session]\nsuppress_persistent_history\n  Input should be a valid boolean [type=bool_type]"},
		{"create_session", map[string]any{"suppress_persistent_history": 2.0},
			"1 validation error for call[create_session]\nsuppress_persistent_history\n  Input should be a valid boolean, unable to interpret input [type=bool_parsing]"},
		{"create_session", map[string]any{"x": "1e3"},
			"1 validation error for call[create_session]\nx\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing]"},
		{"create_session", map[string]any{"x": "-_1"},
			"1 validation error for call[create_session]\nx\n  Input should be a valid integer, unable to parse string as an integer [type=int_parsing]"},
		{"create_session", map[string]any{"x": json.Number("9.3e18")},
			"1 validation error for call[create_session]\nx\n  Unable to parse input string as an integer, exceeded maximum size [type=int_parsing_size]"},
		{"wait_for_text", map[string]any{"timeout": "0x1p3"},
			"1 validation error for call[wait_for_text]\ntimeout\n  Input should be a valid number, unable to parse string as a number [type=float_parsing]"},
		{"split_window", map[string]any{"size": 1.5},
			"2 validation errors for call[split_window]\nsize.str\n  Input should be a valid string [type=string_type]\nsize.int\n  Input should be a valid integer, got a number with a fractional part [type=int_from_float]"},
	}
	for _, tc := range cases {
		res := e.call(tc.tool, tc.args)
		if !res.IsError || text(res) != tc.want {
			t.Errorf("%s %v:\n got %q\nwant %q", tc.tool, tc.args, text(res), tc.want)
		}
		if res.Meta["error_type"] != "ValidationError" || res.Meta["expected"] != true {
			t.Errorf("%s meta %v", tc.tool, res.Meta)
		}
	}
	// Lax forms pydantic accepts.
	wid, _ := e.fixtureWindow()
	for _, h := range []any{"1_9", " 19 ", "19.00", true} {
		e.ok("resize_window", map[string]any{"window_id": wid, "height": h, "width": "7_0"}, nil)
	}
	e.ok("create_window", map[string]any{"attach": "TRUE"}, nil)
}

func TestKillServerStderr(t *testing.T) {
	e := newEnv(t)
	real, err := tmuxtest.LookPath()
	if err != nil {
		t.Fatal(err)
	}
	// A tmux wrapper whose kill-server fails with a message other than
	// "no server running".
	bin := t.TempDir() + "/tmux"
	script := "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = kill-server ] && { echo 'permission denied' >&2; echo 'second line' >&2; exit 1; }; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.setVar("LIBTMUX_TMUX_BIN", bin)
	// libtmux raises LibTmuxException(stderr lines): the text is the
	// Python list, without a subcommand prefix.
	res := e.fail("kill_server", nil, "tmux error: ['permission denied', 'second line']")
	if text(res) != "tmux error: ['permission denied', 'second line']" || res.Meta["error_type"] != "LibTmuxException" || res.Meta["expected"] != true {
		t.Fatalf("%q %v", text(res), res.Meta)
	}
	// "no server running" is success.
	e.setVar("LIBTMUX_TMUX_BIN", os.Getenv(tmuxtest.EnvBin))
	e.ok("kill_server", map[string]any{"socket_name": e.socket + "-none"}, nil)
}
