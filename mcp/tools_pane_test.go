package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/mcp/tools"
	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// ---- helpers ----

// withCommand appends a plain "sh" when args name no command: the
// developer's login shell can be slow to start (profile scripts), and
// these panes only need to exist.
func withCommand(args []string) []string {
	if len(args) == 0 || strings.HasPrefix(args[len(args)-1], "-") {
		return append(args, "sh")
	}
	return args
}

// paneSplit adds a pane next to target (without selecting it) and returns
// its id; the last argument may be the command to run.
func (e *testEnv) paneSplit(target string, args ...string) string {
	e.t.Helper()
	a := append([]string{"split-window", "-d", "-t", target, "-P", "-F", "#{pane_id}"}, withCommand(args)...)
	return e.tmux(a...)
}

// paneNewWindow adds a detached window to the fixture session; it returns
// the window id and its first pane id.
func (e *testEnv) paneNewWindow(args ...string) (string, string) {
	e.t.Helper()
	a := append([]string{"new-window", "-d", "-t", "fixture:", "-P", "-F", "#{window_id} #{pane_id}"}, withCommand(args)...)
	w, p, _ := strings.Cut(e.tmux(a...), " ")
	return w, p
}

// paneShell replaces the fixture's first pane with a plain POSIX shell
// (prompt "$ ") and returns its id once the prompt shows.
func (e *testEnv) paneShell() string {
	e.t.Helper()
	p := e.firstPane()
	e.tmux("respawn-pane", "-k", "-t", p, "env PS1='$ ' sh")
	waitFor(e.t, "sh prompt", func() bool { return strings.Contains(e.paneCapture(p), "$") })
	return p
}

// paneAttr evaluates a format against a target on the test socket.
func (e *testEnv) paneAttr(target, format string) string {
	e.t.Helper()
	return e.tmux("display-message", "-p", "-t", target, format)
}

// paneCapture returns a pane's visible text plus history.
func (e *testEnv) paneCapture(pane string) string {
	e.t.Helper()
	return e.tmux("capture-pane", "-p", "-t", pane, "-S", "-200")
}

// paneSocketPath is the test server's socket path.
func (e *testEnv) paneSocketPath() string {
	e.t.Helper()
	return e.tmux("display-message", "-p", "#{socket_path}")
}

// paneLinesWindow opens a window whose pane prints lineN for N in 1..n and
// then idles, and waits until the last line is visible.
func (e *testEnv) paneLinesWindow(n int) (string, string) {
	e.t.Helper()
	w, p := e.paneNewWindow(fmt.Sprintf("sh -c 'i=1; while [ $i -le %d ]; do echo line$i; i=$((i+1)); done; exec sleep 3600'", n))
	waitFor(e.t, "printed lines", func() bool {
		return strings.Contains(e.paneCapture(p), fmt.Sprintf("line%d", n))
	})
	return w, p
}

func paneNumbered(from, to int) string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("line%d", i))
	}
	return strings.Join(out, "\n")
}

// ---- send_keys ----

func TestPaneSendKeys(t *testing.T) {
	e := newEnv(t)
	pane := e.paneShell()
	got := e.ok("send_keys", map[string]any{"keys": "echo SK_$((40+2))", "pane_id": pane}, nil)
	if got != "Keys sent to pane "+pane {
		t.Fatalf("send_keys = %q", got)
	}
	waitFor(t, "echo output", func() bool { return strings.Contains(e.paneCapture(pane), "\nSK_42") })

	// Fallback resolution: no target → the first pane of the first session.
	if got := e.ok("send_keys", map[string]any{"keys": "", "enter": false}, nil); got != "Keys sent to pane "+pane {
		t.Fatalf("fallback = %q", got)
	}
	e.fail("send_keys", map[string]any{"keys": "x", "pane_id": "%99999"}, "Pane not found: Pane not found: %99999\nCall list_panes")
	e.fail("send_keys", map[string]any{"pane_id": pane}, "Missing required argument")
}

// TestPaneSendKeysBytes checks the byte contract through a pane whose
// process copies its input to a file: key names without -l, literal text
// with -l, a separate Enter, one space for suppress_history and the
// key-name-becomes-text QUIRK.
func TestPaneSendKeysBytes(t *testing.T) {
	e := newEnv(t)
	out := filepath.Join(t.TempDir(), "keys.txt")
	_, pane := e.paneNewWindow("cat > '" + out + "'")
	for _, args := range []map[string]any{
		{"keys": "partial-TUI", "literal": true, "enter": false},
		{"keys": "/needle"},
		{"keys": "explicit-secret", "literal": true, "suppress_history": true},
		{"keys": "C-c", "suppress_history": true},
		{"keys": "C-d", "enter": false},
	} {
		args["pane_id"] = pane
		e.ok("send_keys", args, nil)
	}
	want := "partial-TUI/needle\n explicit-secret\n C-c\n"
	waitFor(t, "cat to finish", func() bool {
		b, _ := os.ReadFile(out)
		return string(b) == want
	})
}

// ---- paste_text ----

func TestPanePasteText(t *testing.T) {
	e := newEnv(t)
	pane := e.paneShell()
	e.tmux("set-buffer", "-b", "userbuf", "keep me")
	got := e.ok("paste_text", map[string]any{"text": "echo PASTE_$((2+3))_marker\n", "pane_id": pane, "bracket": false}, nil)
	if got != "Text pasted to pane "+pane {
		t.Fatalf("paste_text = %q", got)
	}
	waitFor(t, "pasted command output", func() bool { return strings.Contains(e.paneCapture(pane), "\nPASTE_5_marker") })
	e.ok("paste_text", map[string]any{"text": "echo bracketed", "pane_id": pane}, nil)
	if bufs := e.tmux("list-buffers", "-F", "#{buffer_name}"); strings.Contains(bufs, "libtmux_mcp_") || !strings.Contains(bufs, "userbuf") {
		t.Fatalf("buffers after paste: %q", bufs)
	}
	e.fail("paste_text", map[string]any{"text": "x", "pane_id": "%99999"}, "Pane not found")
	e.fail("paste_text", map[string]any{"pane_id": pane}, "Missing required argument")
}

// TestPanePasteTextExact stages text with quotes, a tab and non-ASCII
// characters and checks the bytes that reach the pane's process.
func TestPanePasteTextExact(t *testing.T) {
	e := newEnv(t)
	out := filepath.Join(t.TempDir(), "paste.txt")
	_, pane := e.paneNewWindow("cat > '" + out + "'")
	text := "line one\n  'two' \"three\" $HOME `x` #{pane_id} 100%d\nžluťoučký ✓\n"
	e.ok("paste_text", map[string]any{"text": text, "pane_id": pane, "bracket": false}, nil)
	e.tmux("send-keys", "-t", pane, "C-d")
	waitFor(t, "cat to finish", func() bool {
		b, _ := os.ReadFile(out)
		return string(b) == text
	})
}

// TestPanePasteTextLoadErrors drives the load-buffer failure and timeout
// paths through a tmux wrapper named by LIBTMUX_TMUX_BIN.
func TestPanePasteTextLoadErrors(t *testing.T) {
	e := newEnv(t)
	pane := e.firstPane()
	dir := t.TempDir()
	failing := filepath.Join(dir, "tmux-fail")
	// The commands before load-buffer in the request run, then
	// load-buffer fails and nothing after it runs, as tmux does.
	tb := tmuxtest.Bin()
	script := "#!/bin/bash\ncase \" $* \" in *\" load-buffer \"*) ;; *) exec " + tb + " \"$@\";; esac\n" +
		"pre=()\nfor a in \"$@\"; do [ \"$a\" = load-buffer ] && break; pre+=(\"$a\"); done\n" +
		"if [ \"${pre[-1]}\" = \";\" ]; then unset 'pre[-1]'; " + tb + " \"${pre[@]}\" || exit; fi\n" +
		"echo 'no space left' >&2; exit 1\n"
	if err := os.WriteFile(failing, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.setVar("LIBTMUX_TMUX_BIN", failing)
	e.fail("paste_text", map[string]any{"text": "x", "pane_id": pane}, "load-buffer failed: no space left")

	slow := filepath.Join(dir, "tmux-slow")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\ncase \" $* \" in *\" load-buffer \"*) exec sleep 10;; esac\nexec "+tb+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := tools.PasteLoadTimeout
	tools.PasteLoadTimeout = 300 * time.Millisecond
	t.Cleanup(func() { tools.PasteLoadTimeout = old })
	e.setVar("LIBTMUX_TMUX_BIN", slow)
	start := time.Now()
	res := e.fail("paste_text", map[string]any{"text": "x", "pane_id": pane}, "load-buffer timeout after 5s for 'libtmux_mcp_")
	if !regexp.MustCompile(`^load-buffer timeout after 5s for 'libtmux_mcp_[0-9a-f]{32}_paste'$`).MatchString(text(res)) {
		t.Fatalf("timeout text %q", text(res))
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("timeout took %v", time.Since(start))
	}
	e.setVar("LIBTMUX_TMUX_BIN", os.Getenv(tmuxtest.EnvBin))
	if bufs, _ := e.paneTmuxOut("list-buffers", "-F", "#{buffer_name}"); strings.Contains(bufs, "libtmux_mcp_") {
		t.Fatalf("buffer left behind: %q", bufs)
	}
}

// paneTmuxOut runs tmux on the test socket without failing on a non-zero
// exit (list-buffers exits 1 when there are none on some versions).
func (e *testEnv) paneTmuxOut(args ...string) (string, error) {
	out, err := tmuxtest.Command(append([]string{"-L", e.socket}, args...)...).Output()
	return strings.TrimRight(string(out), "\n"), err
}

// ---- capture_pane ----

func TestPaneCapturePane(t *testing.T) {
	e := newEnv(t)
	_, pane := e.paneLinesWindow(10)
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"default", nil, paneNumbered(1, 10)},
		{"cap above size", map[string]any{"max_lines": 100}, paneNumbered(1, 10)},
		{"tail 5", map[string]any{"max_lines": 5}, "[... truncated 5 lines ...]\n" + paneNumbered(6, 10)},
		{"null", map[string]any{"max_lines": nil}, paneNumbered(1, 10)},
		{"zero quirk", map[string]any{"max_lines": 0}, "[... truncated 10 lines ...]\n" + paneNumbered(1, 10)},
		{"negative quirk", map[string]any{"max_lines": -3}, "[... truncated 13 lines ...]\n" + paneNumbered(4, 10)},
		{"range", map[string]any{"start": 1, "end": 2}, "line2\nline3"},
	} {
		args := map[string]any{"pane_id": pane}
		for k, v := range tc.args {
			args[k] = v
		}
		if got := e.ok("capture_pane", args, nil); got != tc.want {
			t.Errorf("%s: capture_pane = %q, want %q", tc.name, got, tc.want)
		}
	}
	// The published default (500) applies when max_lines is omitted.
	_, long := e.paneLinesWindow(600)
	got := e.ok("capture_pane", map[string]any{"pane_id": long, "start": -1000}, nil)
	if want := "[... truncated 100 lines ...]\n" + paneNumbered(101, 600); got != want {
		t.Errorf("default cap: got %d bytes starting %q", len(got), got[:min(len(got), 60)])
	}
	e.fail("capture_pane", map[string]any{"pane_id": "%99999"}, "Pane not found")
	e.fail("capture_pane", map[string]any{"pane_id": pane, "max_lines": "many"}, "max_lines")
}

// ---- snapshot_pane ----

func TestPaneSnapshot(t *testing.T) {
	e := newEnv(t)
	_, pane := e.paneLinesWindow(20)
	var s tools.PaneSnapshot
	e.ok("snapshot_pane", map[string]any{"pane_id": pane}, &s)
	if s.PaneID != pane || s.Content != paneNumbered(1, 20) || s.ContentTruncated || s.ContentTruncatedLines != 0 {
		t.Fatalf("snapshot %+v", s)
	}
	if s.CursorX < 0 || s.CursorY != 20 || s.PaneWidth != 80 || s.PaneHeight <= 0 || s.HistorySize < 0 {
		t.Fatalf("geometry %+v", s)
	}
	if s.PaneInMode || s.PaneMode != nil || s.ScrollPosition != nil || s.IsCaller != nil {
		t.Fatalf("mode fields %+v", s)
	}
	if s.PanePid == nil || !regexp.MustCompile(`^\d+$`).MatchString(*s.PanePid) || s.PaneDead == nil || *s.PaneDead || s.AlternateOn == nil {
		t.Fatalf("liveness %+v", s)
	}
	if s.PaneTty == nil || !strings.HasPrefix(*s.PaneTty, "/dev/") || s.PaneCurrentCommand == nil || *s.PaneCurrentCommand != "sleep" {
		t.Fatalf("process fields %+v", s)
	}
	if s.PaneAtLeft == nil || !*s.PaneAtLeft || s.PaneLeft == nil || *s.PaneLeft != 0 {
		t.Fatalf("edges %+v", s)
	}

	e.ok("snapshot_pane", map[string]any{"pane_id": pane, "max_lines": 5}, &s)
	if s.Content != paneNumbered(16, 20) || !s.ContentTruncated || s.ContentTruncatedLines != 15 {
		t.Fatalf("max_lines=5: %q truncated=%v dropped=%d", s.Content, s.ContentTruncated, s.ContentTruncatedLines)
	}
	e.ok("snapshot_pane", map[string]any{"pane_id": pane, "max_lines": nil}, &s)
	if s.Content != paneNumbered(1, 20) || s.ContentTruncated {
		t.Fatalf("max_lines=null: %+v", s)
	}
	e.ok("snapshot_pane", map[string]any{"pane_id": pane, "max_lines": 0}, &s)
	if s.Content != paneNumbered(1, 20) || !s.ContentTruncated || s.ContentTruncatedLines != 20 {
		t.Fatalf("max_lines=0 quirk: %+v", s)
	}
	e.fail("snapshot_pane", map[string]any{"pane_id": "%99999"}, "Pane not found")
}

// TestPaneSnapshotShortReply runs snapshot_pane through a tmux wrapper
// that cuts the snapshot's display-message reply (its 23 fields; the
// request may carry other commands) down to two fields, as an old tmux
// that does not know some variables would.
func TestPaneSnapshotShortReply(t *testing.T) {
	e := newEnv(t)
	pane := e.firstPane()
	wrapper := filepath.Join(t.TempDir(), "tmux-short")
	tb := tmuxtest.Bin()
	script := "#!/bin/sh\ncase \" $* \" in *\" display-message \"*) " + tb + " \"$@\" | awk -F '\xe2\x90\x9e' 'NF == 23 {print $1 \"\xe2\x90\x9e\" $2; next} {print}'; exit 0;; esac\nexec " + tb + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.setVar("LIBTMUX_TMUX_BIN", wrapper)
	var s tools.PaneSnapshot
	e.ok("snapshot_pane", map[string]any{"pane_id": pane}, &s)
	if s.PaneWidth != 0 || s.PaneHeight != 0 || s.HistorySize != 0 || s.Title != nil || s.PaneCurrentCommand != nil ||
		s.PaneCurrentPath != nil || s.PanePid != nil || s.PaneLeft != nil || s.PaneAtTop != nil || s.PaneDead != nil || s.PaneInMode {
		t.Fatalf("short reply snapshot %+v", s)
	}
}

// ---- display_message ----

func TestPaneDisplayMessage(t *testing.T) {
	e := newEnv(t)
	pane := e.firstPane()
	got := e.ok("display_message", map[string]any{"format_string": "#{pane_width}x#{pane_height}", "pane_id": pane}, nil)
	if !regexp.MustCompile(`^80x\d+$`).MatchString(got) {
		t.Fatalf("size = %q", got)
	}
	if got := e.ok("display_message", map[string]any{"format_string": "#{window_zoomed_flag}", "pane_id": pane}, nil); got != "0" {
		t.Fatalf("zoomed flag = %q", got)
	}
	if got := e.ok("display_message", map[string]any{"format_string": "#{?pane_dead,dead,}"}, nil); got != "" {
		t.Fatalf("empty expansion = %q", got)
	}
	if got := e.ok("display_message", map[string]any{"format_string": ""}, nil); got == "" {
		t.Fatal("empty format should print tmux's default message")
	}
	marker := filepath.Join(t.TempDir(), "job-ran")
	res := e.fail("display_message", map[string]any{"format_string": "#(touch " + marker + ")", "pane_id": pane}, "#(")
	if text(res) != "tmux format jobs (#(...)) are not allowed in display_message" {
		t.Fatalf("refusal text %q", text(res))
	}
	// A job built inside tmux by double expansion is refused too.
	e.fail("display_message", map[string]any{"format_string": "#{E:#{a:35}(touch " + marker + ")}", "pane_id": pane}, "modifier \"E\" is not allowed")
	// The refusal precedes tmux: even a bad pane id is not reported.
	e.fail("display_message", map[string]any{"format_string": "x#(true)", "pane_id": "%99999"}, "format jobs")
	e.fail("display_message", map[string]any{"format_string": "x#{E:y}", "pane_id": "%99999"}, "format not allowed")
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("format job ran")
	}
	e.fail("display_message", map[string]any{"format_string": "x", "pane_id": "%99999"}, "Pane not found")
}

// ---- get_pane_info and is_caller ----

func TestPaneGetPaneInfo(t *testing.T) {
	e := newEnv(t)
	left := e.firstPane()
	right := e.paneSplit(left, "-h")
	for _, id := range []string{left, right} {
		var p PaneInfo
		e.ok("get_pane_info", map[string]any{"pane_id": id}, &p)
		if p.PaneID != id || p.PaneWidth == nil || p.PaneHeight == nil {
			t.Fatalf("info %+v", p)
		}
		if p.PaneLeft == nil || p.PaneTop == nil || p.PaneRight == nil || p.PaneBottom == nil ||
			p.PaneAtTop == nil || !*p.PaneAtTop || p.PaneAtBottom == nil || !*p.PaneAtBottom {
			t.Fatalf("geometry %+v", p)
		}
		if p.PaneTty == nil || !strings.HasPrefix(*p.PaneTty, "/dev/") {
			t.Fatalf("tty %+v", p)
		}
		wantLeft := id == left
		if *p.PaneAtLeft != wantLeft || *p.PaneAtRight == wantLeft {
			t.Fatalf("%s edges left=%v right=%v", id, *p.PaneAtLeft, *p.PaneAtRight)
		}
		if p.IsCaller != nil {
			t.Fatalf("is_caller outside tmux = %v", *p.IsCaller)
		}
	}
	var p PaneInfo
	e.ok("get_pane_info", nil, &p)
	if p.PaneID != left {
		t.Fatalf("fallback pane %s, want %s", p.PaneID, left)
	}

	e.setVar("TMUX_PANE", left)
	e.ok("get_pane_info", map[string]any{"pane_id": left}, &p)
	if p.IsCaller == nil || *p.IsCaller {
		t.Fatalf("TMUX_PANE without TMUX: is_caller %v", p.IsCaller)
	}
	e.setVar("TMUX", e.paneSocketPath()+",1,$0")
	e.ok("get_pane_info", map[string]any{"pane_id": left}, &p)
	if p.IsCaller == nil || !*p.IsCaller {
		t.Fatalf("own pane: is_caller %v", p.IsCaller)
	}
	e.ok("get_pane_info", map[string]any{"pane_id": right}, &p)
	if p.IsCaller == nil || *p.IsCaller {
		t.Fatalf("other pane: is_caller %v", p.IsCaller)
	}
	e.fail("get_pane_info", map[string]any{"pane_id": "%99999"}, "Pane not found: Pane not found: %99999")
	e.fail("get_pane_info", map[string]any{"window_id": "@99999"}, "Object not found")
}

// ---- find_pane_by_position ----

func TestPaneFindByPosition(t *testing.T) {
	e := newEnv(t)
	w, first := e.paneNewWindow()
	e.paneSplit(first, "-h")
	e.paneSplit(first, "-v")
	e.paneSplit(first, "-v")
	e.tmux("select-layout", "-t", w, "tiled")
	found := map[string]PaneInfo{}
	seen := map[string]bool{}
	for _, corner := range []string{"top-left", "top-right", "bottom-left", "bottom-right"} {
		var p PaneInfo
		e.ok("find_pane_by_position", map[string]any{"corner": corner, "window_id": w}, &p)
		found[corner] = p
		seen[p.PaneID] = true
	}
	if len(seen) != 4 {
		t.Fatalf("corners map to %d panes: %v", len(seen), seen)
	}
	if tl := found["top-left"]; !*tl.PaneAtTop || !*tl.PaneAtLeft {
		t.Fatalf("top-left %+v", tl)
	}
	if br := found["bottom-right"]; !*br.PaneAtBottom || !*br.PaneAtRight {
		t.Fatalf("bottom-right %+v", br)
	}

	single := e.firstPane()
	for _, corner := range []string{"top-left", "top-right", "bottom-left", "bottom-right"} {
		var p PaneInfo
		e.ok("find_pane_by_position", map[string]any{"corner": corner, "session_name": "fixture", "window_index": "0"}, &p)
		if p.PaneID != single {
			t.Fatalf("%s of single-pane window = %s, want %s", corner, p.PaneID, single)
		}
	}
	e.fail("find_pane_by_position", map[string]any{"corner": "middle"}, "Input should be 'top-left', 'top-right', 'bottom-left' or 'bottom-right'")
	e.fail("find_pane_by_position", map[string]any{"corner": "top-left", "window_id": "@99999"}, "Object not found")
}

// ---- set_pane_title ----

func TestPaneSetTitle(t *testing.T) {
	e := newEnv(t)
	pane := e.firstPane()
	var p PaneInfo
	e.ok("set_pane_title", map[string]any{"title": "my_test_title", "pane_id": pane}, &p)
	if p.PaneID != pane || p.PaneTitle == nil || *p.PaneTitle != "my_test_title" {
		t.Fatalf("title %+v", p)
	}
	// A title means itself: tmux does not expand it.
	marker := filepath.Join(t.TempDir(), "ran")
	hostile := "x#(touch " + marker + ")#S#{E:#{a:35}(touch " + marker + ")}"
	e.ok("set_pane_title", map[string]any{"title": hostile, "pane_id": pane}, &p)
	if got := e.paneAttr(pane, "#{pane_title}"); got != hostile || p.PaneTitle == nil || *p.PaneTitle != hostile {
		t.Fatalf("title %q (result %v), want %q", got, p.PaneTitle, hostile)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a title ran a shell command")
	}
	e.fail("set_pane_title", map[string]any{"title": "t", "pane_id": "%99999"}, "Pane not found")
}

// ---- clear_pane ----

func TestPaneClear(t *testing.T) {
	e := newEnv(t)
	pane := e.paneShell()
	e.tmux("send-keys", "-t", pane, "echo CLEAR_$((6*7))_MARK", "Enter")
	waitFor(t, "marker", func() bool { return strings.Contains(e.paneCapture(pane), "CLEAR_42_MARK") })
	if got := e.ok("clear_pane", map[string]any{"pane_id": pane}, nil); got != "Pane cleared: "+pane {
		t.Fatalf("clear_pane = %q", got)
	}
	waitFor(t, "marker to go", func() bool { return !strings.Contains(e.paneCapture(pane), "CLEAR_42_MARK") })
	if got := e.paneAttr(pane, "#{history_size}"); got != "0" {
		t.Fatalf("history_size after clear = %s", got)
	}
	e.fail("clear_pane", map[string]any{"pane_id": "%99999"}, "Pane not found")
}

// ---- resize_pane ----

func TestPaneResize(t *testing.T) {
	e := newEnv(t)
	top := e.firstPane()
	bottom := e.paneSplit(top, "-v")
	var p PaneInfo
	e.ok("resize_pane", map[string]any{"pane_id": top, "height": 5, "width": 40}, &p)
	if p.PaneID != top || *p.PaneHeight != "5" {
		t.Fatalf("resized %+v", p)
	}
	e.ok("resize_pane", map[string]any{"pane_id": top}, &p) // neither: a no-op call
	if *p.PaneHeight != "5" {
		t.Fatalf("no-op resize changed height to %s", *p.PaneHeight)
	}
	zoomed := func() string { return e.paneAttr(top, "#{window_zoomed_flag}") }
	for _, step := range []struct {
		zoom bool
		want string
	}{{true, "1"}, {true, "1"}, {false, "0"}, {false, "0"}} {
		e.ok("resize_pane", map[string]any{"pane_id": bottom, "zoom": step.zoom}, &p)
		if p.PaneID != bottom || zoomed() != step.want {
			t.Fatalf("zoom=%v: flag %s, want %s", step.zoom, zoomed(), step.want)
		}
	}
	e.fail("resize_pane", map[string]any{"pane_id": top, "zoom": true, "height": 10}, "Cannot combine zoom with height/width")
	e.fail("resize_pane", map[string]any{"pane_id": "%99999", "zoom": false, "width": 0}, "Cannot combine zoom")
	e.fail("resize_pane", map[string]any{"pane_id": "%99999", "height": 3}, "Pane not found")
}

// ---- kill_pane ----

func TestPaneKill(t *testing.T) {
	e := newEnv(t)
	first := e.firstPane()
	victim := e.paneSplit(first)
	e.fail("kill_pane", nil, "Missing required argument")
	if got := e.ok("kill_pane", map[string]any{"pane_id": victim}, nil); got != "Pane killed: "+victim {
		t.Fatalf("kill_pane = %q", got)
	}
	if panes := e.tmux("list-panes", "-a", "-F", "#{pane_id}"); strings.Contains(panes+"\n", victim+"\n") {
		t.Fatalf("%s still listed: %s", victim, panes)
	}
	e.fail("kill_pane", map[string]any{"pane_id": victim}, "Pane not found: Pane not found: "+victim)

	// The caller's own pane on this server is refused.
	own := e.paneSplit(first)
	e.setVar("TMUX_PANE", own)
	e.setVar("TMUX", e.paneSocketPath()+",1,$0")
	res := e.fail("kill_pane", map[string]any{"pane_id": own}, "Refusing to kill")
	if text(res) != "Refusing to kill the pane running this MCP server. Use a manual tmux command if intended." {
		t.Fatalf("guard text %q", text(res))
	}
	// The guard runs before the lookup: a missing pane named by TMUX_PANE
	// is refused, not reported as missing.
	e.setVar("TMUX_PANE", "%99999")
	e.fail("kill_pane", map[string]any{"pane_id": "%99999"}, "Refusing to kill")
	// TMUX_PANE without TMUX: conservatively on every server.
	e.setVar("TMUX_PANE", own)
	e.setVar("TMUX", "")
	e.fail("kill_pane", map[string]any{"pane_id": own}, "Refusing to kill")
	// A caller on an unrelated server does not block.
	e.setVar("TMUX", filepath.Join(t.TempDir(), "elsewhere")+",1,$0")
	e.ok("kill_pane", map[string]any{"pane_id": own}, nil)
}

// ---- respawn_pane ----

func TestPaneRespawn(t *testing.T) {
	e := newEnv(t)
	pane := e.paneSplit(e.firstPane(), "sleep 3600")
	pid := e.paneAttr(pane, "#{pane_pid}")
	var p PaneInfo
	e.ok("respawn_pane", map[string]any{"pane_id": pane}, &p)
	if p.PaneID != pane || p.PanePid == nil || *p.PanePid == pid {
		t.Fatalf("respawn kept pid %s: %+v", pid, p)
	}
	e.ok("respawn_pane", map[string]any{"pane_id": pane, "shell": "sleep 7200"}, &p)
	if p.PaneID != pane || p.PaneCurrentCommand == nil {
		t.Fatalf("shell respawn %+v", p)
	}
	// The shell tmux starts the command with may still be exec'ing it.
	waitFor(t, "sleep as current command", func() bool {
		var q PaneInfo
		e.ok("get_pane_info", map[string]any{"pane_id": pane}, &q)
		return q.PaneCurrentCommand != nil && strings.Contains(*q.PaneCurrentCommand, "sleep")
	})
	if got := e.paneAttr(pane, "#{pane_start_command}"); !strings.Contains(got, "sleep 7200") {
		t.Fatalf("start command %q", got)
	}
	// kill=false refuses a live pane (a tmux error).
	e.fail("respawn_pane", map[string]any{"pane_id": pane, "kill": false}, "tmux error: respawn-pane:")

	// History conflict: refused before anything happens.
	pid = e.paneAttr(pane, "#{pane_pid}")
	e.fail("respawn_pane", map[string]any{"pane_id": pane, "suppress_persistent_history": true, "environment": map[string]any{"HISTFILE": "/tmp/h"}},
		"environment variable HISTFILE conflicts with suppress_persistent_history=True")
	e.fail("respawn_pane", map[string]any{"pane_id": "%99999", "environment": "[1]"}, "environment must be a JSON object, got list")
	if got := e.paneAttr(pane, "#{pane_pid}"); got != pid {
		t.Fatalf("conflict respawned the pane: %s -> %s", pid, got)
	}

	// The caller's own pane is refused.
	e.setVar("TMUX_PANE", pane)
	e.setVar("TMUX", e.paneSocketPath()+",1,$0")
	res := e.fail("respawn_pane", map[string]any{"pane_id": pane}, "Refusing to respawn")
	if text(res) != "Refusing to respawn the pane running this MCP server. Use a manual tmux command if intended." {
		t.Fatalf("guard text %q", text(res))
	}
	e.setVar("TMUX_PANE", "")
	e.setVar("TMUX", "")
	e.fail("respawn_pane", map[string]any{"pane_id": "%99999"}, "Pane not found: Pane not found: %99999")
	e.fail("respawn_pane", map[string]any{"pane_id": pane, "session_name": "fixture"}, "Unexpected keyword argument")
}

func TestPaneRespawnDeadPaneAndEnvironment(t *testing.T) {
	e := newEnv(t)
	w, first := e.paneNewWindow()
	e.tmux("set-option", "-w", "-t", w, "remain-on-exit", "on")
	dead := e.paneSplit(first, "true")
	waitFor(t, "pane to die", func() bool { return e.paneAttr(dead, "#{pane_dead}") == "1" })
	var p PaneInfo
	e.ok("respawn_pane", map[string]any{"pane_id": dead, "kill": false, "shell": "sleep 3600"}, &p)
	if p.PaneID != dead {
		t.Fatalf("respawned %+v", p)
	}
	waitFor(t, "pane to live", func() bool { return e.paneAttr(dead, "#{pane_dead}") == "0" })

	// tmux 3.3 can drop output written right after respawn-pane -k, so
	// the command waits a moment before printing.
	dir := t.TempDir()
	e.ok("respawn_pane", map[string]any{
		"pane_id":                     dead,
		"shell":                       "sh -c 'sleep 0.3; printenv FLEET_FOO FLEET_BAZ HISTFILE HISTCONTROL; pwd'",
		"environment":                 map[string]any{"FLEET_FOO": "bar", "FLEET_BAZ": "qux"},
		"start_directory":             dir,
		"suppress_persistent_history": true,
	}, &p)
	waitFor(t, "printenv to finish", func() bool { return e.paneAttr(dead, "#{pane_dead}") == "1" })
	got := e.paneCapture(dead)
	if !strings.Contains(got, "bar\nqux\n\nignorespace\n") {
		t.Fatalf("respawned process output %q lacks the environment", got)
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	if !strings.Contains(got, dir) && !strings.Contains(got, realDir) {
		t.Fatalf("respawned process output %q lacks the start directory %s", got, dir)
	}
}

// ---- select_pane ----

func TestPaneSelect(t *testing.T) {
	e := newEnv(t)
	top := e.firstPane()
	bottom := e.paneSplit(top, "-v")
	var p PaneInfo
	e.ok("select_pane", map[string]any{"pane_id": bottom}, &p)
	if p.PaneID != bottom || *p.PaneActive != "1" {
		t.Fatalf("select by id %+v", p)
	}
	e.ok("select_pane", map[string]any{"pane_id": top}, &p)
	e.ok("select_pane", map[string]any{"direction": "down"}, &p)
	if p.PaneID != bottom {
		t.Fatalf("down from top = %s, want %s", p.PaneID, bottom)
	}
	e.ok("select_pane", map[string]any{"direction": "last", "session_name": "fixture"}, &p)
	if p.PaneID != top {
		t.Fatalf("last = %s, want %s", p.PaneID, top)
	}
	e.fail("select_pane", nil, "Provide either pane_id or direction.")
	e.fail("select_pane", map[string]any{"direction": "sideways"}, "Input should be")
	e.fail("select_pane", map[string]any{"pane_id": "%99999"}, "Pane not found")
	e.fail("select_pane", map[string]any{"direction": "up", "window_id": "@99999"}, "Object not found")
}

func TestPaneSelectNextPreviousTargetWindow(t *testing.T) {
	e := newEnv(t)
	w1 := e.paneAttr(e.firstPane(), "#{window_id}")
	p1 := e.firstPane()
	e.paneSplit(p1)
	e.paneSplit(p1)
	w2, q1 := e.paneNewWindow()
	e.paneSplit(q1)
	e.paneSplit(q1)
	e.tmux("select-window", "-t", w1)
	order := strings.Split(e.tmux("list-panes", "-t", w2, "-F", "#{pane_id}"), "\n")
	if len(order) != 3 || e.paneAttr(w2, "#{pane_id}") != order[0] {
		t.Fatalf("window %s panes %v", w2, order)
	}
	w1Before := e.paneAttr(w1, "#{pane_id}")
	active := func() string { return e.paneAttr(w2, "#{pane_id}") }
	for _, step := range []struct{ dir, want string }{
		{"next", order[1]}, {"next", order[2]}, {"next", order[0]}, {"previous", order[2]}, {"previous", order[1]},
	} {
		var p PaneInfo
		e.ok("select_pane", map[string]any{"direction": step.dir, "window_id": w2}, &p)
		if p.PaneID != step.want || active() != step.want {
			t.Fatalf("%s: returned %s, active %s, want %s", step.dir, p.PaneID, active(), step.want)
		}
	}
	if got := e.paneAttr(w1, "#{pane_id}"); got != w1Before {
		t.Fatalf("window %s active pane moved %s -> %s", w1, w1Before, got)
	}
}

// ---- swap_pane ----

func TestPaneSwap(t *testing.T) {
	e := newEnv(t)
	a := e.firstPane()
	b := e.paneSplit(a, "-v")
	aTop, bTop := e.paneAttr(a, "#{pane_top}"), e.paneAttr(b, "#{pane_top}")
	var p PaneInfo
	e.ok("swap_pane", map[string]any{"source_pane_id": a, "target_pane_id": b}, &p)
	if p.PaneID != a || fmt.Sprint(*p.PaneTop) != bTop || e.paneAttr(b, "#{pane_top}") != aTop {
		t.Fatalf("swap: %+v (tops were %s/%s)", p, aTop, bTop)
	}
	e.fail("swap_pane", map[string]any{"source_pane_id": a, "target_pane_id": "%99999"}, "Pane not found: Pane not found: %99999")
	e.fail("swap_pane", map[string]any{"source_pane_id": a}, "Missing required argument")
}

// ---- pipe_pane ----

func TestPanePipe(t *testing.T) {
	e := newEnv(t)
	pane := e.paneShell()
	log := filepath.Join(t.TempDir(), "pane output.log")
	got := e.ok("pipe_pane", map[string]any{"pane_id": pane, "output_path": log}, nil)
	if got != "Piping pane "+pane+" to "+log {
		t.Fatalf("start = %q", got)
	}
	e.tmux("send-keys", "-t", pane, "echo START_$((1+1))_MARK", "Enter")
	waitFor(t, "piped output", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "START_2_MARK")
	})
	if got := e.ok("pipe_pane", map[string]any{"pane_id": pane}, nil); got != "Piping stopped for pane "+pane {
		t.Fatalf("stop = %q", got)
	}
	e.tmux("send-keys", "-t", pane, "echo POST_$((1+2))_MARK", "Enter")
	waitFor(t, "echo after stop", func() bool { return strings.Contains(e.paneCapture(pane), "POST_3_MARK") })
	time.Sleep(150 * time.Millisecond)
	if b, _ := os.ReadFile(log); strings.Contains(string(b), "POST_3_MARK") {
		t.Fatal("output still piped after stop")
	}

	// append=false truncates.
	e.ok("pipe_pane", map[string]any{"pane_id": pane, "output_path": log, "append": false}, nil)
	e.tmux("send-keys", "-t", pane, "echo AGAIN_$((2+2))", "Enter")
	waitFor(t, "second pipe", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "AGAIN_4") && !strings.Contains(string(b), "START_2_MARK")
	})
	e.ok("pipe_pane", map[string]any{"pane_id": pane, "output_path": nil}, nil)

	for _, bad := range []string{"", "   ", "\t"} {
		e.fail("pipe_pane", map[string]any{"pane_id": pane, "output_path": bad}, "output_path must be a non-empty path, or None to stop piping.")
	}
	e.fail("pipe_pane", map[string]any{"pane_id": "%99999", "output_path": ""}, "Pane not found")
}

func TestPanePipeExactPath(t *testing.T) {
	e := newEnv(t)
	pane := e.paneShell()
	for i, name := range []string{
		"fmt-#{pane_id}.log",
		"job-#(echo pwned).log",
		"#Session.log",
		"style-#[fg=red].log",
		"already-##{x}.log",
		"issue #42.log",
		"100%done.log",
		"date-%Y.log",
		"it's \"quoted\" $HOME.log",
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		got := e.ok("pipe_pane", map[string]any{"pane_id": pane, "output_path": path}, nil)
		if got != "Piping pane "+pane+" to "+path {
			t.Fatalf("%s: %q", name, got)
		}
		mark := fmt.Sprintf("EXACT_%d_$((%d+1))", i, i)
		want := fmt.Sprintf("EXACT_%d_%d", i, i+1)
		e.tmux("send-keys", "-t", pane, "echo "+mark, "Enter")
		waitFor(t, "pipe to "+name, func() bool {
			b, _ := os.ReadFile(path)
			return strings.Contains(string(b), want)
		})
		e.ok("pipe_pane", map[string]any{"pane_id": pane}, nil)
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 || entries[0].Name() != name {
			var names []string
			for _, en := range entries {
				names = append(names, en.Name())
			}
			t.Fatalf("%s: files on disk %q", name, names)
		}
	}
}

// ---- copy mode ----

func TestPaneCopyMode(t *testing.T) {
	e := newEnv(t)
	_, pane := e.paneLinesWindow(60)
	var p PaneInfo
	e.ok("enter_copy_mode", map[string]any{"pane_id": pane}, &p)
	if p.PaneID != pane {
		t.Fatalf("enter %+v", p)
	}
	var s tools.PaneSnapshot
	e.ok("snapshot_pane", map[string]any{"pane_id": pane}, &s)
	if !s.PaneInMode || s.PaneMode == nil || *s.PaneMode != "copy-mode" || s.ScrollPosition == nil || *s.ScrollPosition != 0 {
		t.Fatalf("in copy mode: %+v", s)
	}
	e.ok("exit_copy_mode", map[string]any{"pane_id": pane}, &p)
	if e.paneAttr(pane, "#{pane_in_mode}") != "0" {
		t.Fatal("still in copy mode")
	}
	// Leaving when not in copy mode is not an error.
	e.ok("exit_copy_mode", map[string]any{"pane_id": pane}, &p)

	e.ok("enter_copy_mode", map[string]any{"pane_id": pane, "scroll_up": 5}, &p)
	e.ok("snapshot_pane", map[string]any{"pane_id": pane}, &s)
	if !s.PaneInMode || s.ScrollPosition == nil || *s.ScrollPosition != 5 {
		t.Fatalf("scrolled: %+v", s)
	}
	e.ok("exit_copy_mode", map[string]any{"pane_id": pane}, nil)
	e.ok("enter_copy_mode", map[string]any{"pane_id": pane, "scroll_up": 0}, nil)
	if got := e.paneAttr(pane, "#{scroll_position}"); got != "0" {
		t.Fatalf("scroll_up=0 scrolled to %s", got)
	}
	e.fail("enter_copy_mode", map[string]any{"pane_id": "%99999"}, "Pane not found")
	e.fail("exit_copy_mode", map[string]any{"pane_id": "%99999"}, "Pane not found")
}

// ---- annotations ----

func TestPaneToolAnnotations(t *testing.T) {
	e := newEnv(t)
	res, err := e.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, tl := range res.Tools {
		byName[tl.Name] = i
	}
	openWorld := map[string]bool{"send_keys": true, "paste_text": true, "pipe_pane": true, "swap_pane": false, "enter_copy_mode": false}
	for name, want := range openWorld {
		i, ok := byName[name]
		if !ok {
			t.Fatalf("%s not listed", name)
		}
		a := res.Tools[i].Annotations
		if a == nil || a.OpenWorldHint == nil || *a.OpenWorldHint != want {
			t.Errorf("%s openWorldHint = %v, want %v", name, a, want)
		}
	}
	desc := res.Tools[byName["send_keys"]].Description
	for _, want := range []string{"run_command", "send_keys_batch", "capture_since", "wait_for_channel"} {
		if !strings.Contains(desc, want) {
			t.Errorf("send_keys description lacks %s", want)
		}
	}
	for _, name := range []string{"respawn_pane", "clear_pane"} {
		a := res.Tools[byName[name]].Annotations
		if a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint || a.IdempotentHint {
			t.Errorf("%s annotations %+v", name, a)
		}
	}
}

// ---- argv ----

// TestPaneArgv records the tmux argv of several tools through a wrapper
// named by LIBTMUX_TMUX_BIN; every argument is logged in brackets.
func TestPaneArgv(t *testing.T) {
	e := newEnv(t)
	pane := e.firstPane()
	victim := e.paneSplit(pane, "sleep 3600")
	dir := t.TempDir()
	log := filepath.Join(dir, "argv.log")
	wrapper := filepath.Join(dir, "tmux-rec")
	script := "#!/bin/sh\nprintf '[%s]' \"$@\" >> '" + log + "'\necho >> '" + log + "'\nexec " + tmuxtest.Bin() + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.setVar("LIBTMUX_TMUX_BIN", wrapper)
	calls := func() string {
		b, _ := os.ReadFile(log)
		_ = os.Remove(log)
		return string(b)
	}
	has := func(what, got string, re string) {
		t.Helper()
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("%s: no tmux call matching %s in\n%s", what, re, got)
		}
	}
	p := regexp.QuoteMeta(pane)

	e.ok("clear_pane", map[string]any{"pane_id": pane}, nil)
	// One request: the lookup, its check, the reset and the purge.
	has("clear_pane", calls(), `(?m)\[list-panes\]\[-a\].*\[send-keys\]\[-t\]\[`+p+`\]\[-R\]\[;\].*\[clear-history\]\[-t\]\[`+p+`\]$`)

	e.ok("send_keys", map[string]any{"pane_id": pane, "keys": "explicit", "literal": true, "suppress_history": true}, nil)
	got := calls()
	// With a pane id the keys and the separate Enter go in one tmux
	// invocation, as two commands.
	has("send_keys", got, `(?m)\[send-keys\]\[-t\]\[`+p+`\]\[-l\]\[ explicit\]\[;\]\[send-keys\]\[-t\]\[`+p+`\]\[Enter\]$`)
	e.ok("send_keys", map[string]any{"pane_id": pane, "keys": "C-c", "enter": false}, nil)
	got = calls()
	has("send_keys key name", got, `(?m)\[send-keys\]\[-t\]\[`+p+`\]\[C-c\]$`)
	if strings.Contains(got, "[Enter]") {
		t.Errorf("enter=false sent Enter:\n%s", got)
	}

	e.ok("paste_text", map[string]any{"pane_id": pane, "text": "x"}, nil)
	got = calls()
	name := regexp.MustCompile(`libtmux_mcp_[0-9a-f]{32}_paste`).FindString(got)
	if name == "" {
		t.Fatalf("no buffer name in\n%s", got)
	}
	// One request: the lookup, the load and the paste (-d deletes the
	// buffer, so no delete-buffer follows a paste that ran).
	has("load-buffer", got, `(?m)^\[-u\]\[-L\]\[[^]]*\]\[list-panes\]\[-a\].*\[load-buffer\]\[-b\]\[`+name+`\]\[-\]\[;\].*\[paste-buffer\]\[-t\]\[`+p+`\]\[-d\]\[-p\]\[-b\]\[`+name+`\]$`)
	if strings.Count(got, "\n") != 1 || strings.Contains(got, "delete-buffer") {
		t.Errorf("paste_text made more than one request:\n%s", got)
	}
	e.ok("paste_text", map[string]any{"pane_id": pane, "text": "x", "bracket": false}, nil)
	has("paste-buffer without -p", calls(), `(?m)\[paste-buffer\]\[-t\]\[`+p+`\]\[-d\]\[-b\]\[libtmux_mcp_[0-9a-f]{32}_paste\]$`)

	out := filepath.Join(dir, "fmt-#{pane_id} 100%.log")
	e.ok("pipe_pane", map[string]any{"pane_id": pane, "output_path": out, "append": false}, nil)
	has("pipe-pane", calls(), `(?m)\[pipe-pane\]\[-t\]\[`+p+`\]\[cat > '`+regexp.QuoteMeta(filepath.Join(dir, "fmt-##{pane_id} 100%%.log"))+`'\]$`)
	e.ok("pipe_pane", map[string]any{"pane_id": pane}, nil)
	has("pipe-pane stop", calls(), `(?m)\[pipe-pane\]\[-t\]\[`+p+`\]$`)

	e.ok("respawn_pane", map[string]any{"pane_id": victim, "shell": "sleep 7", "start_directory": dir, "environment": map[string]any{"B": "2", "A": "1"}}, nil)
	has("respawn-pane", calls(), `(?m)\[respawn-pane\]\[-t\]\[`+regexp.QuoteMeta(victim)+`\]\[-k\]\[-c`+regexp.QuoteMeta(dir)+`\]\[-eA=1\]\[-eB=2\]\[sleep 7\]\[;\]`)

	e.ok("resize_pane", map[string]any{"pane_id": pane, "height": 6, "width": 0}, nil)
	has("resize-pane", calls(), `(?m)\[resize-pane\]\[-t\]\[`+p+`\]\[-y6\]\[;\]`)

	e.ok("enter_copy_mode", map[string]any{"pane_id": pane, "scroll_up": 3}, nil)
	// Commands whose verdict is ignored run only where they can succeed.
	has("copy-mode scroll", calls(), `(?m)\[copy-mode\]\[-t\]\[`+p+`\]\[;\].*\[if-shell\]\[-F\]\[-t\]\[`+p+`\]\[[^]]*pane_mode[^]]*\]\[send-keys -t `+p+` -N 3 -X scroll-up\]\[;\]`)
	e.ok("exit_copy_mode", map[string]any{"pane_id": pane}, nil)
	has("copy-mode cancel", calls(), `(?m)\[if-shell\]\[-F\]\[-t\]\[`+p+`\]\[[^]]*pane_mode[^]]*\]\[send-keys -t `+p+` -X cancel\]\[;\]`)

	e.ok("display_message", map[string]any{"pane_id": pane, "format_string": ""}, nil)
	has("display-message empty", calls(), `(?m)\[display-message\]\[-t\]\[`+p+`\]\[-p\]$`)
}
