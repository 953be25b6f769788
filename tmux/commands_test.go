package tmux

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func intp(n int) *int       { return &n }
func strp(s string) *string { return &s }

func TestCommandArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  Cmd
		want []string
	}{
		{"send-keys", SendKeys("%1", false, "ls"), []string{"send-keys", "-t", "%1", "ls"}},
		{"send-keys literal separator", SendKeys("%1", true, ";"), []string{"send-keys", "-t", "%1", "-l", `\;`}},
		{"send-keys raw", SendKeysRaw("%1", true, ";"), []string{"send-keys", "-t", "%1", "-l", ";"}},
		{"enter", SendEnter("%1"), []string{"send-keys", "-t", "%1", "Enter"}},
		{"copy-mode command", CopyModeCommand("%1", "scroll-up", 3), []string{"send-keys", "-t", "%1", "-N", "3", "-X", "scroll-up"}},
		{"copy-mode cancel", CopyModeCommand("%1", "cancel", 0), []string{"send-keys", "-t", "%1", "-X", "cancel"}},
		{"paste-buffer", PasteBuffer("%1", "b", true, true), []string{"paste-buffer", "-t", "%1", "-d", "-p", "-b", "b"}},
		{"capture visible", CapturePane("%1", nil, nil), []string{"capture-pane", "-t", "%1", "-p"}},
		{"capture range", CapturePane("%1", intp(-5), intp(2)), []string{"capture-pane", "-t", "%1", "-p", "-S", "-5", "-E", "2"}},
		{"capture joined", Capture{Target: "%1", Start: "-", Join: true}.Cmd(), []string{"capture-pane", "-p", "-J", "-t", "%1", "-S", "-"}},
		{"display default", DisplayMessage("%1", ""), []string{"display-message", "-t", "%1", "-p"}},
		{"display format", DisplayMessage("%1", "#{pane_id}"), []string{"display-message", "-t", "%1", "-p", "#{pane_id}"}},
		{"respawn", RespawnPane("%1", true, strp("/a#b"), []string{"A=1"}, "sh"), []string{"respawn-pane", "-t", "%1", "-k", "-c/a##b", "-eA=1", "sh"}},
		{"title", SetPaneTitle("%1", "#x"), []string{"select-pane", "-t", "%1", "-T", "##x"}},
		{"pipe stop", PipePane("%1", ""), []string{"pipe-pane", "-t", "%1"}},
		{"resize", ResizePane("%1", intp(10), nil), []string{"resize-pane", "-t", "%1", "-y10"}},
		{"split", SplitWindow(Split{Target: "%1", Vertical: true, Before: true, Size: "50%", Spawn: Spawn{Dir: "/d", Env: []string{"A=1"}}, Shell: "top"}),
			[]string{"split-window", "-t", "%1", "-v", "-b", "-l50%", "-P", "-F", "#{pane_id}", "-c/d", "-d", "-eA=1", "top"}},
		{"split size format", SplitWindow(Split{Target: "%1", Size: "#{e|+:1,2}"}), []string{"split-window", "-t", "%1", "-h", "-l##{e|+:1,2}", "-P", "-F", "#{pane_id}", "-d"}},
		{"split horizontal", SplitWindow(Split{Target: "%1"}), []string{"split-window", "-t", "%1", "-h", "-P", "-F", "#{pane_id}", "-d"}},
		{"move-window", MoveWindow("$1:2", "$3", ""), []string{"move-window", "-s", "$1:2", "-t", "$3:"}},
		{"layout", SelectLayout("@1", ""), []string{"select-layout", "-t", "@1"}},
		{"resize-window", ResizeWindow("@1", 0, 80), []string{"resize-window", "-t", "@1", "-x80"}},
		{"list ids", ListIDs("window", ""), []string{"list-windows", "-a", "-F", "#{window_id}"}},
		{"list ids of", ListIDs("pane", "@2"), []string{"list-panes", "-t", "@2", "-F", "#{pane_id}"}},
		{"list sessions", ListIDs("session", ""), []string{"list-sessions", "-F", "#{session_id}"}},
		{"show-options", ShowOptions(OptionTarget{ID: "@1", Global: true, Scope: ScopeWindow}, "x"), []string{"show-options", "-t", "@1", "-g", "-w", "x"}},
		{"set-option server", SetOption(OptionTarget{Scope: ScopeServer}, "x", "1"), []string{"set-option", "-s", "x", "1"}},
		{"show-hooks session scope", ShowHooks(OptionTarget{Scope: ScopeSession}), []string{"show-hooks", ""}},
		{"show-hooks target", ShowHooks(OptionTarget{ID: "%1", Scope: ScopePane}), []string{"show-hooks", "-t", "%1"}},
		{"env global", SetEnvironment("", "A", "1"), []string{"set-environment", "-g", "A", "1"}},
		{"env session", ShowEnvironment("$1"), []string{"show-environment", "-t", "$1"}},
		{"signal", Signal("c"), []string{"wait-for", "-S", "c"}},
		{"server option", SetServerOption("@j"), []string{"set-option", "-s", "@j"}},
		{"show server option", ShowServerOption("@j"), []string{"show-options", "-s", "-v", "-q", "@j"}},
		{"unset server option", UnsetServerOption("@j"), []string{"set-option", "-s", "-u", "-q", "@j"}},
	} {
		if got := tc.cmd.Args(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNewSessionAndWindowArgv(t *testing.T) {
	ns := NewSession{Name: strp("a#"), WindowName: strp("w"), Width: intp(80), Spawn: Spawn{Dir: "/d", Env: []string{"A=1"}}}
	want := []string{"new-session", "-d", "-P", "-F", Format(SessionFields), "-s", "a##", "-c", "/d", "-n", "w", "-x", "80", "-eA=1"}
	if got := ns.Cmd().Args(); !reflect.DeepEqual(got, want) {
		t.Errorf("new-session argv %q, want %q", got, want)
	}
	nw := NewWindow{Session: "$1", After: true, Spawn: Spawn{Env: []string{"A=1"}}}
	want = []string{"new-window", "-t", "$1:", "-d", "-P", "-F", Format(WindowFields), "-eA=1", "-a"}
	if got := nw.Cmd().Args(); !reflect.DeepEqual(got, want) {
		t.Errorf("new-window argv %q, want %q", got, want)
	}
}

func TestCommandList(t *testing.T) {
	s := &Server{SocketName: "x"}
	got := s.CmdArgv(ResetTerminal("%1"), ClearHistory("%1"))
	want := []string{"tmux", "-u", "-L", "x", "send-keys", "-t", "%1", "-R", ";", "clear-history", "-t", "%1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("command list argv %q, want %q", got, want)
	}
	if got := s.ShellCommand(Signal("r_1")); got != "tmux -L x wait-for -S r_1" {
		t.Errorf("ShellCommand = %q", got)
	}
}

func TestContainsFilter(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		regex   bool
		fast    bool
	}{
		{"192.168.1.1", false, true},
		{"plain text", false, true},
		{"plain", true, true},
		{"(group)", true, false},
		{".*", true, false},
		{"a}b", false, false},
		{"#{pane_id}", false, false},
		{"#(echo x)", false, false},
		{"a}b", true, false},
		{"#(x", true, false},
	} {
		if _, got := ContainsFilter(tc.pattern, tc.regex, false); got != tc.fast {
			t.Errorf("ContainsFilter(%q, regex=%v) ok = %v", tc.pattern, tc.regex, got)
		}
	}
	if f, _ := ContainsFilter("err", false, true); f != "#{C:err}" {
		t.Errorf("match_case filter %q", f)
	}
	if f, _ := ContainsFilter("err", false, false); f != "#{C/i:err}" {
		t.Errorf("filter %q", f)
	}
}

func TestIfThen(t *testing.T) {
	cases := []struct {
		name string
		c    Cmd
		want []string
	}{
		{"plain words", CopyModeCommand("%3", "scroll-up", 5),
			[]string{"if-shell", "-F", "-t", "%3", "COND", "send-keys -t %3 -N 5 -X scroll-up"}},
		{"zoom", ToggleZoom("%3"), []string{"if-shell", "-F", "-t", "%3", "COND", "resize-pane -t %3 -Z"}},
		// Anything tmux's parser would read differently runs unconditionally
		// instead of being joined into a command string.
		{"space", cmd("rename-window", "-t", "@1", "a b"), []string{"rename-window", "-t", "@1", "a b"}},
		{"quote", cmd("rename-window", "-t", "@1", "a'b"), []string{"rename-window", "-t", "@1", "a'b"}},
		{"semicolon", cmd("rename-window", "-t", "@1", "a;"), []string{"rename-window", "-t", "@1", "a;"}},
		{"variable", cmd("kill-session", "-t", "$1"), []string{"kill-session", "-t", "$1"}},
		{"format", cmd("rename-window", "-t", "@1", "#{x}"), []string{"rename-window", "-t", "@1", "#{x}"}},
		{"empty", cmd("rename-window", "-t", "@1", ""), []string{"rename-window", "-t", "@1", ""}},
	}
	for _, tc := range cases {
		if got := IfThen("%3", "COND", tc.c).Args(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPaneChange runs a change and the re-read in one request on a real
// server: a change that fails is the error (as Do reports it) and nothing
// after it runs; a change that succeeds answers the pane as re-read.
func TestPaneChange(t *testing.T) {
	s := testServer(t, "change")
	ctx := context.Background()
	rows, err := s.Panes(ctx, PanesAll, "")
	if err != nil || len(rows) == 0 {
		t.Fatalf("panes: %v %v", rows, err)
	}
	id := rows[0]["pane_id"]
	p, err := PaneChange(ctx, s, PaneTarget{PaneID: &id}, func(pid string) []Cmd { return []Cmd{SetPaneTitle(pid, "changed")} })
	if err != nil || p["pane_title"] != "changed" {
		t.Fatalf("PaneChange title: %v %v", p, err)
	}
	_, err = PaneChange(ctx, s, PaneTarget{PaneID: &id}, func(pid string) []Cmd {
		return []Cmd{cmd("resize-pane", "-t", pid, "-x", "bad"), SetPaneTitle(pid, "not reached")}
	})
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Sub != "resize-pane" || len(ce.Stderr) == 0 {
		t.Fatalf("failed change: %#v", err)
	}
	if p, err := RefreshPane(ctx, s, id); err != nil || p["pane_title"] != "changed" {
		t.Fatalf("a command after the failed one ran: %v %v", p, err)
	}
	missing := "%999"
	_, err = PaneChange(ctx, s, PaneTarget{PaneID: &missing}, func(pid string) []Cmd { return []Cmd{SetPaneTitle(pid, "x")} })
	var nf *PaneNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("missing pane: %#v", err)
	}
	// Zoom set twice is zoomed once: the condition reads the window's
	// flag (a toggle would unzoom the second time).
	if _, err := s.Do(ctx, cmd("split-window", "-t", id, "-d")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		zoom bool
		flag string
	}{{true, "1"}, {true, "1"}, {false, "0"}, {false, "0"}} {
		if _, err := PaneChange(ctx, s, PaneTarget{PaneID: &id}, func(pid string) []Cmd { return []Cmd{SetZoom(pid, want.zoom)} }); err != nil {
			t.Fatal(err)
		}
		if lines, err := s.Display(ctx, id, "#{window_zoomed_flag}"); err != nil || len(lines) == 0 || lines[0] != want.flag {
			t.Fatalf("zoom %v: flag %v %v, want %s", want.zoom, lines, err, want.flag)
		}
	}
}
