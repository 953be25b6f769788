package tmux

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestPositionalArgv: a user's name, value or command that starts with
// '-' comes after "--", so tmux never reads it as a flag; every other
// argv is what it was.
func TestPositionalArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  Cmd
		want []string
	}{
		{"rename-session flag-like", RenameSession("$1", "-k"), []string{"rename-session", "-t", "$1", "--", "-k"}},
		{"rename-session plain", RenameSession("$1", "k-"), []string{"rename-session", "-t", "$1", "k-"}},
		{"rename-session dash", RenameSession("$1", "-"), []string{"rename-session", "-t", "$1", "--", "-"}},
		{"rename-window flag-like", RenameWindow("@1", "-t%0"), []string{"rename-window", "-t", "@1", "--", "-t%0"}},
		{"rename-window plain", RenameWindow("@1", "w"), []string{"rename-window", "-t", "@1", "w"}},
		// send-keys keeps the reference's argv: keys starting with '-' are
		// flags there too (docs/compatibility.md).
		{"send-keys as the reference", SendKeys("%1", false, "-R"), []string{"send-keys", "-t", "%1", "-R"}},
		{"send-keys raw as the reference", SendKeysRaw("%1", true, "-X"), []string{"send-keys", "-t", "%1", "-l", "-X"}},
		{"display flag-like", DisplayMessage("%1", "-a"), []string{"display-message", "-t", "%1", "-p", "--", "-a"}},
		{"respawn flag-like shell", RespawnPane("%1", false, nil, nil, "-k"), []string{"respawn-pane", "-t", "%1", "--", "-k"}},
		{"split flag-like shell", SplitWindow(Split{Target: "%1", Shell: "-Z"}), []string{"split-window", "-t", "%1", "-h", "-P", "-F", "#{pane_id}", "-d", "--", "-Z"}},
		{"set-option flag-like name", SetOption(OptionTarget{Global: true}, "-u", "status"), []string{"set-option", "-g", "--", "-u", "status"}},
		{"set-option flag-like value", SetOption(OptionTarget{Global: true}, "@x", "-u"), []string{"set-option", "-g", "@x", "-u"}},
		{"show-options flag-like", ShowOptions(OptionTarget{}, "-g"), []string{"show-options", "--", "-g"}},
		{"show-hook flag-like", ShowHook(OptionTarget{Global: true}, "-w"), []string{"show-hooks", "-g", "--", "-w"}},
		{"show-hook session scope", ShowHook(OptionTarget{Scope: ScopeSession}, "-w"), []string{"show-hooks", "", "-w"}},
		{"env flag-like name", SetEnvironment("", "-u", "HOME"), []string{"set-environment", "-g", "--", "-u", "HOME"}},
		{"env session flag-like", SetEnvironment("$1", "-r", "x"), []string{"set-environment", "-t", "$1", "--", "-r", "x"}},
		{"env flag-like value", SetEnvironment("", "A", "-u"), []string{"set-environment", "-g", "A", "-u"}},
		{"wait-for flag-like", WaitFor("-L"), []string{"wait-for", "--", "-L"}},
		{"signal flag-like", Signal("-U"), []string{"wait-for", "-S", "--", "-U"}},
	} {
		if got := tc.cmd.Args(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPositionalRealTmux runs the flag-like names and values through a
// real tmux server (exec and native client) and reads them back.
func TestPositionalRealTmux(t *testing.T) {
	label := nativeTestServer(t)
	for _, native := range []bool{false, true} {
		s := &Server{Executor: localExecutor(native), SocketName: label}
		ctx := context.Background()
		read := func(args ...string) string {
			t.Helper()
			res := execTmux(t, s, args...)
			return strings.TrimSpace(string(res.Stdout))
		}
		for _, name := range []string{"-k", "-d", "--", "-"} {
			if _, err := s.Do(ctx, RenameSession("main", name)); err != nil {
				t.Fatalf("native=%v rename-session %q: %v", native, name, err)
			}
			if got := read("list-sessions", "-F", "#{session_name}"); got != name {
				t.Fatalf("native=%v rename-session %q: session is named %q", native, name, got)
			}
			if _, err := s.Do(ctx, RenameSession(name, "main")); err != nil {
				t.Fatalf("native=%v rename back from %q: %v", native, name, err)
			}
			if _, err := s.Do(ctx, RenameWindow("main:0", name)); err != nil {
				t.Fatalf("native=%v rename-window %q: %v", native, name, err)
			}
			if got := read("list-windows", "-t", "main", "-F", "#{window_name}"); got != name {
				t.Fatalf("native=%v rename-window %q: window is named %q", native, name, got)
			}
		}
		// "-u" as an environment name: set, not an unset of HOME.
		if _, err := s.Do(ctx, SetEnvironment("", "-u", "HOME")); err != nil {
			t.Fatalf("native=%v set-environment -u: %v", native, err)
		}
		if got := read("show-environment", "-g", "--", "-u"); got != "-u=HOME" {
			t.Fatalf("native=%v set-environment: %q", native, got)
		}
		// A user option whose value looks like a flag is set as a value.
		if _, err := s.Do(ctx, SetOption(OptionTarget{Global: true}, "@flaglike", "-u")); err != nil {
			t.Fatalf("native=%v set-option: %v", native, err)
		}
		if got := read("show-options", "-g", "-v", "@flaglike"); got != "-u" {
			t.Fatalf("native=%v set-option value %q", native, got)
		}
		// "-u" as an option name is tmux's unknown option, never an unset.
		if _, err := s.Do(ctx, SetOption(OptionTarget{Global: true}, "-u", "status")); err == nil || !strings.Contains(err.Error(), "invalid option") {
			t.Fatalf("native=%v set-option named -u: %v", native, err)
		}
		if got := read("show-options", "-g", "-v", "status"); got != "on" {
			t.Fatalf("native=%v status became %q", native, got)
		}
	}
}
