package tmux

import (
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
