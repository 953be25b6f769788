package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// runCommand types an authored command into a pane's shell inside a
// subshell, followed by a trailer that stores $? in a private pane option
// and signals a private wait-for channel, then waits for that signal.
func checkRunCommand(a runCommandArgs) error {
	command := a.Command
	if pyfmt.Strip(command) == "" {
		return Expectedf("command must not be empty")
	}
	if a.SuppressHistory && strings.ContainsAny(command, "\n\r") {
		return Expectedf("command must be a single line when suppress_history=True")
	}
	if !(runCommandTimeout(a.Timeout) > 0) {
		return Expectedf("timeout must be positive")
	}
	return nil
}

// runCommandTimeout is run_command's timeout argument, 30 s when absent.
func runCommandTimeout(timeout *float64) float64 {
	if timeout != nil {
		return *timeout
	}
	return 30.0
}

// runSettle is how long run_command lets the shell print its prompt after
// the trailer signalled, before it captures the pane: the prompt is part
// of what libtmux-mcp returns (it captures in a later tmux call).
const runSettle = 15 * time.Millisecond

// runCommandArgs are run_command's arguments (its pane is paneTarget's).
type runCommandArgs struct {
	Command         string // checked by checkRunCommand
	SuppressHistory bool
	Detach          bool
	Timeout         *float64
	MaxLines        *int
}

func runCommand(ctx context.Context, c *Call, a runCommandArgs) (any, error) {
	command := a.Command
	suppress := a.SuppressHistory
	effective := min(runCommandTimeout(a.Timeout), waitCeiling(c))
	// Extensions (tools_jobs.go): detach, and a timeout past
	// --max-call-seconds; both leave a job when the command runs on.
	if a.Detach {
		return runDetached(ctx, c, a)
	}
	if limit := c.env.callLimit(); limit > 0 && runCommandTimeout(a.Timeout) > limit {
		return runWithDeadline(ctx, c, a, effective, limit)
	}
	defer c.tick(ctx, effective, "run_command")()
	srv := c.srv
	id, err := runCommandID()
	if err != nil {
		return nil, Unexpected("RuntimeError", err)
	}
	channel, statusOption := "r_"+id, "@s_"+id

	// One request finds the pane, types the command, waits for its
	// trailer to signal the channel (wait-for holds the rest of the
	// list), reads and unsets the status it left and captures the pane
	// once the shell has had runSettle to print its prompt; the timeout
	// ends the request.
	// The pane is found first: its shell decides the wrapper
	// (shellwrap.go). The capture right after the status is read shows
	// the screen before the shell prints its next prompt.
	paneID := ""
	started := time.Now()
	wctx, cancel := context.WithTimeout(ctx, durSeconds(effective))
	replies, err := runCommandAct(wctx, c, func(p string, syntax shellSyntax) []tmux.Cmd {
		paneID = p
		payload := runCommandPayload(srv, p, channel, statusOption, command, suppress)
		if syntax == syntaxFish {
			payload = fishPayload(srv, p, channel, statusOption, command, suppress)
		}
		return []tmux.Cmd{
			tmux.SendKeysRaw(p, true, payload), tmux.SendEnter(p), tmux.WaitFor(channel),
			tmux.ShowPaneOption(p, statusOption), tmux.UnsetPaneOption(p, statusOption),
			tmux.Capture{Target: p, Join: true}.Cmd(),
			tmux.Pause(runSettle), tmux.Capture{Target: p, Join: true}.Cmd(),
		}
	})
	cancel()
	timedOut := false
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil && paneID != "" && errors.Is(wctx.Err(), context.DeadlineExceeded):
		timedOut = true
	case err != nil:
		return nil, err
	case replies[0].Err != nil:
		return nil, replies[0].Err // the pane went away before the keys reached it
	case replies[1].Err != nil:
		return nil, replies[1].Err
	case replies[2].Err != nil:
		return nil, Expectedf("wait-for failed for run_command channel %s: %s", pyfmt.Repr(channel), replyErrText(replies[2]))
	}
	elapsed := time.Since(started).Seconds()

	var exitStatus *int
	var lines, printed []string
	if !timedOut {
		n, err := exitStatusOf(replies[3], statusOption)
		if err != nil {
			return nil, err
		}
		exitStatus = &n
		if r := replies[5]; r.Ran && r.Err == nil {
			printed = commandPrinted(r.Lines, channel)
		}
		if r := replies[7]; r.Ran && r.Err == nil {
			lines = r.Lines
		} else if r.Err != nil {
			return nil, r.Err
		}
	}
	if lines == nil {
		capOut, err := srv.Exec(ctx, tmux.Capture{Target: paneID, Join: true}.Cmd())
		if err != nil {
			return nil, err
		}
		lines = capOut.Lines()
	}
	visible := filterRunCommandLines(lines, channel, statusOption)
	tailed := tailOutput(visible, a.MaxLines)
	if printed != nil {
		printed, _, _ = tailLines(printed, a.MaxLines)
	}
	return RunCommandResult{
		printed:          printed,
		PaneID:           paneID,
		ExitStatus:       exitStatus,
		TimedOut:         timedOut,
		ElapsedSeconds:   PyFloat(elapsed),
		TailedOutput:     tailed,
		EffectiveTimeout: PyFloat(effective),
		Host:             c.HostField(),
	}, nil
}

// runCommandPayload builds the three lines typed into the shell: an
// opening parenthesis (space-prefixed when history is suppressed), the
// command, and the trailer that records $? and signals the channel.
func runCommandPayload(srv *tmux.Server, paneID, channel, statusOption, command string, suppress bool) string {
	statusCmd := srv.ShellCommand(tmux.SetPaneOption(paneID, statusOption))
	signalCmd := srv.ShellCommand(tmux.Signal(channel))
	open := "("
	if suppress {
		open = " ("
	}
	return open + "\n" + pyfmt.RStrip(command) + "\n" + `); s=$?; ` + statusCmd + ` "$s"; ` + signalCmd
}

// runCommandID is 10 random hex digits shared by the channel and the
// status option of one call.
func runCommandID() (string, error) {
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// waitCeiling is the server's wait ceiling (LIBTMUX_MCP_WAIT_MAX_SECONDS).
func waitCeiling(c *Call) float64 {
	if w := c.Settings().WaitMax; w > 0 {
		return w
	}
	return waitMaxDefault
}

// durSeconds converts seconds to a Duration.
func durSeconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// stderrOrExit is a failed command's stripped stderr, or "exit N".
func stderrOrExit(out *tmux.Output) string {
	if s := pyfmt.Strip(strings.ToValidUTF8(string(out.Stderr), "\uFFFD")); s != "" {
		return s
	}
	return "exit " + strconv.Itoa(out.ExitCode)
}

// replyErrText is stderrOrExit for a failed command of a batch.
func replyErrText(r tmux.Reply) string {
	if s := pyfmt.Strip(strings.Join(r.Err.Stderr, "\n")); s != "" {
		return s
	}
	return "exit " + strconv.Itoa(r.ExitCode)
}

// tailLines keeps lines[-max:] with Python slice semantics (so 0 keeps
// everything and a negative value drops lines from the top) and reports
// whether anything was cut and how many lines len-max is.
func tailLines(lines []string, max *int) ([]string, bool, int) {
	if max == nil || len(lines) <= *max {
		return lines, false, 0
	}
	return pyfmt.SliceFrom(lines, -*max), true, len(lines) - *max
}

// tailOutput is tailLines as the result models report it.
func tailOutput(lines []string, max *int) TailedOutput {
	kept, truncated, dropped := tailLines(lines, max)
	return TailedOutput{Output: kept, OutputTruncated: truncated, OutputTruncatedLines: dropped}
}

// Output filter for run_command. The patterns are the reference's
// (constants.RUN_COMMAND_FILTER_STATUS_RE / _WAIT_RE, Python syntax);
// pyRegexToRE2 rewrites the parts RE2 lacks.
const (
	runFilterStatusPy = `(?:__libtmux_mcp_status|s)=\$\?;\s*(?:\S*/)?tmux(?:\s+-[LS]\s+(?:'[^']*'|\S+))*\s+set-option -p(?:\s+-t\s+(?:'[^']*'|\S+))?\s+(?P<prefix>@libtmux_mcp_status_|@s_)(?P<id>[0-9a-fA-F]+)(?![0-9A-Za-z_])`
	runFilterWaitPy   = `[0-9a-fA-F]*\s*"\$(?:__libtmux_mcp_status|s)";\s*(?:\S*/)?tmux(?:\s+-[LS]\s+(?:'[^']*'|\S+))*\s+wait-for -S (?P<prefix>libtmux_mcp_run_|r_)(?P<id>[0-9a-fA-F]*)(?![0-9A-Za-z_])`
)

var (
	runFilterStatusRE = regexp.MustCompile(pyRegexToRE2(runFilterStatusPy))
	runFilterWaitRE   = regexp.MustCompile(pyRegexToRE2(runFilterWaitPy))
)

// pyWhitespace is the character class Python's \s matches in str
// patterns (str.isspace); RE2's \s is ASCII-only and omits \v.
const pyWhitespace = `\t\n\v\f\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`

// pyRegexToRE2 translates the two filter patterns: the trailing negative
// lookahead becomes a consumed "non-word character or end" (nothing
// follows it, so matching is unchanged and the greedy id is maximal), and
// \s / \S get Python's Unicode whitespace set.
func pyRegexToRE2(p string) string {
	p = strings.ReplaceAll(p, `(?![0-9A-Za-z_])`, `(?:[^0-9A-Za-z_]|$)`)
	p = strings.ReplaceAll(p, `\s`, "["+pyWhitespace+"]")
	p = strings.ReplaceAll(p, `\S`, "[^"+pyWhitespace+"]")
	return p
}

// filterRunCommandLines drops run_command's private synchronisation rows:
// any row naming this call's channel or option, rows shaped like a status
// or signal trailer (current or legacy markers), and the hex continuation
// row of a trailer whose id was cut by wrapping.
func filterRunCommandLines(lines []string, channel, statusOption string) []string {
	kept := []string{}
	dropHex := false
	for _, line := range lines {
		stripped := pyfmt.Strip(line)
		if dropHex && len(stripped) >= 8 && len(stripped) <= 32 && allHex(stripped) {
			dropHex = false
			continue
		}
		if strings.Contains(line, channel) || strings.Contains(line, statusOption) {
			dropHex = false
			continue
		}
		sm := runFilterStatusRE.FindStringSubmatch(line)
		wm := runFilterWaitRE.FindStringSubmatch(line)
		if sm != nil || wm != nil {
			dropHex = false
			for _, pair := range []struct {
				re *regexp.Regexp
				m  []string
			}{{runFilterStatusRE, sm}, {runFilterWaitRE, wm}} {
				if pair.m == nil {
					continue
				}
				prefix := pair.m[pair.re.SubexpIndex("prefix")]
				id := pair.m[pair.re.SubexpIndex("id")]
				want := 10
				if strings.Contains(prefix, "libtmux_mcp") {
					want = 32
				}
				if len(id) < want {
					dropHex = true
				}
			}
			continue
		}
		dropHex = false
		kept = append(kept, line)
	}
	return kept
}

// allHex reports whether s is made of hex digits only.
func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F') {
			return false
		}
	}
	return true
}

// exitStatusOf reads the exit status run_command's wrapper left in the
// pane option statusOption (the reply of its show-options), for
// run_command and for a job's end alike.
func exitStatusOf(r tmux.Reply, statusOption string) (int, error) {
	text := ""
	if len(r.Lines) > 0 {
		text = pyfmt.Strip(r.Lines[0])
	}
	n, err := tmux.ParseInt(text)
	if err != nil || text == "" {
		return 0, Expectedf("run_command could not read exit status from %s", pyfmt.Repr(statusOption))
	}
	return n, nil
}
