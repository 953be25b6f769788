package tools

import (
	"context"
	"path"
	"strings"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// run_command types its command inside a wrapper the pane's shell must
// parse. The reference types a POSIX wrapper whatever the shell; fish
// rejects it ("Unsupported use of '='") and leaves broken text behind,
// and the call then waits for a signal that never comes. So the wrapper
// follows the pane's foreground process (tmux's pane_current_command):
// POSIX shells and anything unknown get the reference's wrapper byte for
// byte, fish gets an equivalent fish wrapper, and shells whose syntax has
// no equivalent are refused before a key is typed.

// shellSyntax is the command language a pane's foreground process reads.
type shellSyntax int

const (
	syntaxPOSIX shellSyntax = iota // sh, dash, bash, zsh, ksh, ash, and anything unknown (the reference's behaviour)
	syntaxFish
	syntaxUnsupported
)

// unsupportedShells read a language that run_command's wrapper cannot be
// written in without changing what the command means (csh's `( )` does
// not span lines; the others have no `$?`-style status at all).
var unsupportedShells = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range tmux.NonPOSIXShells {
		m[name] = name != "fish" // fish has a wrapper of its own
	}
	return m
}()

// paneShell names the shell tmux reports as a pane's current command:
// the basename, without a login shell's leading '-'.
func paneShell(currentCommand string) string {
	name := strings.TrimSpace(currentCommand)
	name = strings.TrimPrefix(name, "-")
	return path.Base(name)
}

// syntaxOf is the wrapper language for a pane whose current command is
// name (as paneShell returns it).
func syntaxOf(name string) shellSyntax {
	switch {
	case name == "fish":
		return syntaxFish
	case unsupportedShells[name]:
		return syntaxUnsupported
	}
	return syntaxPOSIX
}

// errUnsupportedShell is run_command's refusal for a pane whose shell
// cannot run its wrapper; nothing has been typed.
func errUnsupportedShell(paneID, shell string) error {
	return Expectedf("run_command cannot run in pane %s: its shell is %s, whose syntax run_command's wrapper does not support (it supports sh, dash, bash, zsh, ksh and fish); nothing was typed. Use send_keys and capture_pane in this pane, or start a supported shell in it", paneID, shell)
}

// fishPayload is runCommandPayload for fish: the command inside a
// begin/end block (fish has no line-spanning subshell; a block keeps
// its variables local but a cd inside it stays), then the same status
// and signal trailer with fish quoting.
func fishPayload(srv *tmux.Server, paneID, channel, statusOption, command string, suppress bool) string {
	open := "begin"
	if suppress {
		open = " begin" // fish leaves commands starting with a space out of its history
	}
	statusCmd := fishJoin(srv.PlainArgv(tmux.SetPaneOption(paneID, statusOption)))
	signalCmd := fishJoin(srv.PlainArgv(tmux.Signal(channel)))
	return open + "\n" + pyfmt.RStrip(command) + "\n" + `end; set s $status; ` + statusCmd + ` "$s"; ` + signalCmd
}

// fishJoin quotes argv for fish: bare words when every byte is safe,
// else single quotes, in which fish treats backslash and single quote
// specially (and nothing else).
func fishJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = fishQuote(a)
	}
	return strings.Join(parts, " ")
}

func fishQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%_-+=:,./", r))
	}) < 0 {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(s) + "'"
}

// commandPrinted is what the command itself printed, read from the pane
// captured (joined) when its trailer signalled and before the shell
// printed its next prompt: the rows after the trailer (which ends with
// the call's channel), without the screen's blank rows below. Some line
// editors (zsh's) break a long input line with hard newlines, which
// capture-pane -J cannot join, so the channel is looked for in the rows
// run together. When the trailer has scrolled off the screen entirely,
// every row is the command's. Prompts and echoed input never reach it,
// so hosts whose prompts differ still compare equal.
func commandPrinted(lines []string, channel string) []string {
	var all strings.Builder
	ends := make([]int, len(lines)) // offset in all where row i ends
	for i, l := range lines {
		all.WriteString(l)
		ends[i] = all.Len()
	}
	start := 0
	if k := strings.LastIndex(all.String(), channel); k >= 0 {
		end := k + len(channel)
		for i, e := range ends {
			if e >= end {
				start = i + 1
				break
			}
		}
	} else if len(lines) > 0 {
		// Only the tail of a wrapped trailer may be left at the top.
		if first := strings.TrimSpace(lines[0]); first != "" && strings.HasSuffix(channel, first) {
			start = 1
		}
	}
	out := lines[start:]
	end := len(out)
	for end > 0 && strings.TrimRight(out[end-1], " ") == "" {
		end--
	}
	return append([]string{}, out[:end]...)
}

// runCommandAct finds the pane c targets, refuses a shell the wrapper
// cannot be written for, and sends act's commands for it (built for the
// pane's shell syntax) as one request.
func runCommandAct(ctx context.Context, c *Call, act func(paneID string, syntax shellSyntax) []tmux.Cmd) ([]tmux.Reply, error) {
	p, err := tmux.ResolvePane(ctx, c.srv, paneTarget(c))
	if err != nil {
		return nil, err
	}
	id, shell := p["pane_id"], paneShell(p["pane_current_command"])
	syntax := syntaxOf(shell)
	if syntax == syntaxUnsupported {
		return nil, errUnsupportedShell(id, shell)
	}
	return c.srv.Batch(ctx, act(id, syntax)...)
}
