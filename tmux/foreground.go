package tmux

import (
	"strconv"
	"strings"
)

// The foreground process group of a pane's terminal, judged on the pane's
// host inside the request that acts on it. tmux has no format for that
// group, so a shell asked by if-shell reads it with ps (tpgid); if-shell
// expands the pane's formats into the script when it runs, after the
// commands before it in the same request and before the ones after it,
// so what the script sees is the pane as it is then: a pane that is gone
// expands to empty fields, a dead one (remain-on-exit) to pane_dead 1.
//
// The scripts hold only constants, numbers and pane ids, no quote, '#'
// or '!', and run under /bin/sh -c '…' so that sh, bash, zsh, fish and
// csh as default-shell pass them on unchanged.

// SignalSent is the line SignalForeground's command prints when the
// signal was sent.
const SignalSent = "fleetmux-signal-sent"

// livePane is the start of a script about pane: it exits 1 unless the
// pane exists, is not dead, its process is alive (and is want, when want
// is positive) and that process's terminal is the pane's; it leaves the
// pane's process in p, its terminal in t and the terminal's foreground
// process group in g.
func livePane(pane string, want int) string {
	if !IsPaneID(pane) {
		return `exit 1; `
	}
	s := `exec >/dev/null 2>&1; p="#{pane_pid}"; t="#{pane_tty}"; ` +
		`[ "#{pane_id}" = "` + pane + `" ] && [ "#{pane_dead}" = 0 ] && [ -n "$p" ] && [ -n "$t" ] || exit 1; `
	if want > 0 {
		s += `[ "$p" = ` + strconv.Itoa(want) + ` ] || exit 1; `
	}
	return s + `set -- $(ps -o tpgid= -o tty= -p "$p"); g="$1"; [ -n "$2" ] && [ -z "$3" ] && [ "/dev/$2" = "$t" ] || exit 1; `
}

// shellWrap is script as if-shell's shell command.
func shellWrap(script string) string { return "exec /bin/sh -c '" + script + "'" }

// SignalForeground sends sig (a signal name such as TERM or KILL) to the
// foreground process group of pane's terminal once it has confirmed, in
// the same request: the pane exists and is not dead, its process is
// panePID and alive, that process's terminal is the pane's, the
// terminal's foreground group is not the pane's process itself (its
// shell), and that group's leader is alive, leads it and has the pane's
// terminal. Anything else sends nothing. The command prints SignalSent
// when the signal was sent.
func SignalForeground(pane string, panePID int, sig string) Cmd {
	script := `exit 1`
	if panePID > 0 && isWord(sig) {
		script = livePane(pane, panePID) +
			`[ "$g" -gt 1 ] && [ "$g" -ne "$p" ] || exit 1; ` +
			`set -- $(ps -o pgid= -o tty= -p "$g"); [ "$1" = "$g" ] && [ -z "$3" ] && [ "/dev/$2" = "$t" ] || exit 1; ` +
			`exec kill -s ` + sig + ` -- "-$g"`
	}
	return cmd("if-shell", "-t", pane, shellWrap(script), "display-message -p "+SignalSent)
}

// IdleShell is a guard on pane: the commands stop the rest of their
// request unless the pane is live and its terminal's foreground is a
// shell at its prompt: the foreground process group is the pane's own
// process, or a group of one process that is a shell (a shell the pane's
// command started, as in "sh -c sh"), not a command a shell runs or
// another program. It looks five times, 0.1 s apart, for a command that is
// just ending (each look scans the process list once, so few looks). Where ps cannot tell the group the pane counts as idle.
// flag is a pane user option the guard sets and unsets, unique to the
// call ("@" and letters, digits, '_').
func IdleShell(pane, flag string) []Cmd {
	script := `exit 1`
	if IsPaneID(pane) && len(flag) > 1 && flag[0] == '@' && isWord(flag[1:]) {
		script = `exec >/dev/null 2>&1; p="#{pane_pid}"; ` +
			`[ "#{pane_id}" = "` + pane + `" ] && [ "#{pane_dead}" = 0 ] && [ -n "$p" ] || exit 1; ` +
			`i=0; while :; do g=; ` + procTpgid + `[ -n "$g" ] || { set -- $(ps -o tpgid= -p "$p"); g="$1"; }; ` +
			`[ -n "$g" ] || exit 0; [ "$g" = "$p" ] && exit 0; ` +
			`n=0; for x in $(ps -A -o pgid=); do [ "$x" = "$g" ] && n=$((n+1)); done; ` +
			`if [ "$n" = 1 ]; then c=; [ -r "/proc/$g/comm" ] && read -r c < "/proc/$g/comm"; [ -n "$c" ] || c="$(ps -o comm= -p "$g")"; ` +
			`case "$c" in ` + shellNames + `) exit 0;; esac; fi; ` +
			`i=$((i+1)); [ "$i" -lt 5 ] || exit 1; sleep 0.1; done`
	}
	return []Cmd{
		cmd("if-shell", "-t", pane, shellWrap(script), "set-option -p -t "+pane+" "+flag+" 1"),
		guard(pane, "#{"+flag+"}"),
		UnsetPaneOption(pane, flag),
	}
}

// procTpgid reads the foreground group of $p's terminal into g from
// /proc/$p/stat where there is one (Linux), without starting ps: the
// fields after the command name in parentheses are state, ppid, pgrp,
// session, tty_nr and tpgid; a name with a space or ')' leaves g empty.
const procTpgid = `if [ -r "/proc/$p/stat" ]; then read -r x c x x x x x g x < "/proc/$p/stat"; case "$c" in "("*")") ;; *) g= ;; esac; fi; `

// shellNames is a case pattern for the command names of interactive
// shells (a login shell's starts with '-').
const shellNames = `sh|-sh|bash|-bash|dash|-dash|zsh|-zsh|ksh|-ksh|mksh|-mksh|ash|-ash|yash|-yash|fish|-fish|csh|-csh|tcsh|-tcsh`

// isWord reports whether s is non-empty ASCII letters, digits and '_'.
func isWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// NonPOSIXShells are the interactive shells whose language is not POSIX
// sh's: a command line typed for sh (a `( ... )` subshell, `s=$?`) is a
// syntax error or means something else there. Names as tmux reports a
// pane's current command (without a login shell's leading '-').
var NonPOSIXShells = []string{"fish", "csh", "tcsh", "nu", "elvish", "xonsh", "pwsh", "powershell", "rc", "es"}

// posixShellCond is true for a pane whose current command is not one of
// NonPOSIXShells (built from that fixed list, never from input).
var posixShellCond = "#{?#{m/r:^-?(" + strings.Join(NonPOSIXShells, "|") + ")$,#{pane_current_command}},0,1}"

// POSIXShell is a guard that stops the rest of its request when pane's
// current command is one of NonPOSIXShells, before anything is typed.
func POSIXShell(pane string) Cmd { return guard(pane, posixShellCond) }
