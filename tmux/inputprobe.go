package tmux

// The input probe: what the processes in the foreground of a pane's
// terminal are doing, read on the pane's host from /proc inside the
// request that asks (one round trip, locally and over SSH). Package
// tmux/ttyinput parses the line and judges it; this file only builds
// the commands.
//
// tmux 3.3a sends what run-shell prints from a detached client to a
// pane's view mode, not to the client, so the script hands its line back
// the other way: it sets a pane user option through a tmux client of the
// same server (the server's own binary, /proc/#{pid}/exe, on the socket
// $TMUX names in every job tmux runs), and the next command of the
// request prints the option; the last one unsets it.
//
// Like the scripts of foreground.go it holds only constants, formats and
// a pane id: no quote, no '#' outside the formats, no '!', and runs under
// /bin/sh whatever default-shell is. Every read is of a /proc file of
// bounded size, every loop is capped. It is built to start as few
// programs as it can, since a fork costs more than everything else it
// does: the group's members are found with shell builtins (the pane's
// process tree through /proc/PID/task/TID/children, or a scan of
// /proc/[0-9]*/stat where the kernel has no children files), the
// terminal's modes are asked of stty only when a member may be reading
// the terminal (it sleeps, has the terminal open and its wchan is not
// one of a sleep, a wait for children, a pipe, an accept or a futex),
// and the tmux client that hands the line back replaces the script
// (exec). A busy pane costs the job's shell and that client; a prompt
// adds stty.
//
// Locally none of this runs: package ttyinput reads /proc and the
// terminal's modes itself (see ttyinput.NewRequest).

// inputProbeMembers caps the processes of the foreground group that are
// looked at, inputProbeFDs the file descriptors of each, inputProbeTree
// the processes of the pane's tree that are walked to find them.
const (
	inputProbeMembers = "8"
	inputProbeFDs     = "256"
	inputProbeTree    = "64"
)

// inputProbeQuiet is a case pattern of the wchan of a process that
// sleeps on something other than a terminal read: a sleep, a wait for
// its children, a pipe, an accept, a futex, a signal wait.
const inputProbeQuiet = `hrtimer_nanosleep|do_nanosleep|*_nanosleep|do_wait|kernel_wait4|pipe_read|anon_pipe_read|pipe_wait*|pipe_read_*|inet_csk_accept|futex_*|do_sigtimedwait|sigsuspend|sys_pause|do_sys_pause|unix_stream_read_generic|sk_wait_data|unix_wait_for_peer`

// inputProbeScript reads, for pane: the pane's process p, terminal t and
// alternate screen; the terminal's foreground group g (tpgid of p); and
// for each member of g (leader first, at most inputProbeMembers): its
// state, whether its name is a shell's, its /proc syscall line (or "-"
// where it is not readable), its wchan, the descriptors that are the
// terminal and those that are sockets, what the descriptor its syscall's
// first argument names is, and for an epoll wait whether its interest
// list holds the terminal or a socket; then the terminal's modes where a
// member may read it.
//
// The line: "fleetmux-input 1 ARCH ALT ICANON ECHO P G" then per member
// " @ PID STATE SHELL SYSCALL WCHAN TTYFDS SOCKFDS A0 EPTTY EPSOCK",
// fields without spaces ("-" for empty, lists joined with ','); ICANON
// and ECHO are 1 or 0, "-" where stty could not say and "x" where it was
// not asked (no member may read the terminal); or "fleetmux-input 1
// none" where the pane has no process to look at or the host has no
// /proc.
func inputProbeScript(pane, option string) string {
	if !IsPaneID(pane) || !isOption(option) {
		return `exit 1`
	}
	return `exec >/dev/null 2>&1; p="#{pane_pid}"; t="#{pane_tty}"; ` +
		`put() { exec "/proc/#{pid}/exe" set-option -p -t ` + pane + ` ` + option + ` "$1"; }; ` +
		`[ "#{pane_id}" = "` + pane + `" ] && [ "#{pane_dead}" = 0 ] && [ -n "$p" ] && [ -n "$t" ] && [ -r "/proc/$p/stat" ] || put "fleetmux-input 1 none"; ` +
		// The fields of a stat line after the name in parentheses (the
		// last ')' ends the name whatever it holds): state, ppid, pgrp,
		// session, tty_nr, tpgid.
		`fields() { l=; read -r l < "$1" || return 1; z=; IFS=")"; for x in $l; do z="$x"; done; unset IFS; set -f; set -- $z; set +f; s="$1"; pg="$3"; tg="$6"; }; ` +
		`fields "/proc/$p/stat" || put "fleetmux-input 1 none"; g="$tg"; ` +
		`a=; [ -r /proc/sys/kernel/arch ] && read -r a < /proc/sys/kernel/arch; [ -n "$a" ] || a="$(uname -m)"; ` +
		// The group's members: its leader first, then the processes of
		// the pane's tree (breadth first from p, capped), or of all of
		// /proc where the kernel has no children files; the member loop
		// keeps those of group g.
		`m="$g"; if [ "$g" -gt 0 ]; then if [ -r "/proc/$p/task/$p/children" ]; then qu="$p"; k=0; ` +
		`while [ "$k" -lt ` + inputProbeTree + ` ]; do set -f; set -- $qu; set +f; [ "$#" -gt 0 ] || break; x="$1"; shift; qu="$*"; k=$((k+1)); m="$m $x"; ` +
		`for f in /proc/$x/task/[0-9]*/children; do c=; read -r c < "$f" || :; qu="$qu $c"; done; done; ` +
		`elif cd /proc; then for f in [0-9]*; do fields "$f/stat" && [ "$pg" = "$g" ] && m="$m $f"; done; fi; fi; ` +
		`n=0; st=0; mm=; seen=" "; for q in $m; do case "$seen" in *" $q "*) continue;; esac; seen="$seen$q "; ` +
		`[ "$n" -lt ` + inputProbeMembers + ` ] || break; fields "/proc/$q/stat" && [ "$pg" = "$g" ] || continue; n=$((n+1)); ` +
		`c=; read -r c < "/proc/$q/comm"; case "$c" in ` + shellNames + `) k=1;; *) k=0;; esac; ` +
		`y=; read -r y < "/proc/$q/syscall"; set -f; set -- $y; set +f; a0="$2"; ys="${1:--}"; [ "$#" -gt 0 ] && shift; for x; do ys="$ys,$x"; done; ` +
		`w=; read -r w < "/proc/$q/wchan"; ` +
		`tf=; sf=; ak=-; et=0; es=0; if cd "/proc/$q/fd"; then i=0; for d in *; do i=$((i+1)); [ "$i" -le ` + inputProbeFDs + ` ] || break; ` +
		`if [ "$d" -ef "$t" ] || [ "$d" -ef /dev/tty ]; then tf="$tf${tf:+,}$d"; elif [ -S "$d" ]; then sf="$sf${sf:+,}$d"; fi; done; ` +
		`case "$a0" in 0x*) v=$((a0)); if [ "$v" -lt 65536 ] && [ -e "$v" ]; then ` +
		`if [ "$v" -ef "$t" ] || [ "$v" -ef /dev/tty ]; then ak=tty; elif [ -S "$v" ]; then ak=sock; elif [ -p "$v" ]; then ak=pipe; else ak=other; j=0; ` +
		`while read -r e x rest; do [ "$e" = "tfd:" ] || continue; j=$((j+1)); [ "$j" -le 64 ] || break; ` +
		`if [ "$x" -ef "$t" ] || [ "$x" -ef /dev/tty ]; then et=1; elif [ -S "$x" ]; then es=1; fi; done < "/proc/$q/fdinfo/$v"; fi; fi;; esac; fi; ` +
		// Whether this member may read the terminal: it sleeps, has
		// the terminal open and does not sleep on something else.
		`if [ "$s" = S ] && [ -n "$tf" ]; then case "$w" in ` + inputProbeQuiet + `) ;; *) st=1;; esac; fi; ` +
		`mm="$mm @ $q $s $k $ys ${w:--} ${tf:--} ${sf:--} $ak $et $es"; done; ` +
		`ic=x; ec=x; if [ "$st" = 1 ]; then ic=-; ec=-; set -f; for w in $(stty -a < "$t"); do case "$w" in icanon) ic=1;; -icanon) ic=0;; echo) ec=1;; -echo) ec=0;; esac; done; set +f; fi; ` +
		`put "fleetmux-input 1 ${a:--} #{alternate_on} $ic $ec $p $g$mm"`
}

// InputProbe is the request that reads pane's foreground processes (see
// inputProbeScript): an if-shell that runs the script, a display-message
// that prints the line it left in the pane user option named option
// ("@" and letters, digits, '_'; unique to the call, so that two probes
// of one pane at once do not read each other's line), and the unset of
// that option. The display prints an empty line where the script could
// not run or hand its line back.
func InputProbe(pane, option string) []Cmd {
	return []Cmd{
		cmd("if-shell", "-t", pane, shellWrap(inputProbeScript(pane, option)), "", ""),
		DisplayMessage(pane, "#{"+option+"}"),
		UnsetPaneOption(pane, option),
	}
}

// isOption reports whether s is a user option name of this package's
// probes: '@' and a word.
func isOption(s string) bool { return len(s) > 1 && s[0] == '@' && isWord(s[1:]) }
