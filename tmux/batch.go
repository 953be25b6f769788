package tmux

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// Reply is one command's share of a batched request.
type Reply struct {
	// Lines is what the command printed, split like Output.Lines.
	Lines []string
	// Err is the command's failure: tmux wrote to stderr (or exited
	// non-zero) while running it. tmux runs nothing after a failing
	// command of a list.
	Err *CommandError
	// Ran is false for the commands after a failed one.
	Ran bool
	// ExitCode is the tmux client's exit status, on the failed command.
	ExitCode int
}

// Batch sends cmds to tmux as one request (one tmux client, one round
// trip to a remote host) and splits what tmux printed back per command.
// Between two commands it places a display-message that prints a random
// marker line, so every command's output is found even when a command
// prints nothing; the first command without its marker is the one that
// failed, and its stderr is its error. An error return means tmux could
// not be run at all.
//
// stderr from a list in which every command ran (a warning) is
// attributed to the last command.
//
// A LoadBuffer in cmds gives the tmux client its stdin.
func (s *Server) Batch(ctx context.Context, cmds ...Cmd) ([]Reply, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	marker, err := newMarker("fleetmux-batch-")
	if err != nil {
		return nil, err
	}
	list := make([]Cmd, 0, 2*len(cmds))
	for i, c := range cmds {
		list = append(list, c)
		if i < len(cmds)-1 {
			list = append(list, cmd("display-message", "-p", fmt.Sprintf("%s-%d", marker, i)))
		}
	}
	out, err := s.Exec(ctx, list...)
	if err != nil {
		return nil, err
	}
	replies := make([]Reply, len(cmds))
	rest := out.Stdout
	done := 0 // commands whose end was seen
	for done < len(cmds)-1 {
		line := []byte(fmt.Sprintf("%s-%d\n", marker, done))
		i := markerAt(rest, line)
		if i < 0 {
			break
		}
		replies[done] = Reply{Lines: SplitLines(rest[:i]), Ran: true}
		rest = rest[i+len(line):]
		done++
	}
	failed := out.ExitCode != 0 || len(bytes.TrimSpace(out.Stderr)) > 0
	if done == len(cmds)-1 && out.ExitCode == 0 {
		// Every command ran; the last one printed the rest.
		replies[done] = Reply{Lines: SplitLines(rest), Ran: true}
		if failed {
			replies[done].Err, replies[done].ExitCode = batchError(s, cmds[done], out), out.ExitCode
		}
		return replies, nil
	}
	// cmds[done] failed: what it printed before failing is the rest of
	// stdout; nothing after it ran.
	replies[done] = Reply{Lines: SplitLines(rest), Ran: true, Err: batchError(s, cmds[done], out), ExitCode: out.ExitCode}
	return replies, nil
}

// newMarker is prefix and 96 random bits in hex: a line no pane content
// or tmux output will print by chance.
func newMarker(prefix string) (string, error) {
	var tok [12]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return "", fmt.Errorf("tmux: marker: %w", err)
	}
	return prefix + hex.EncodeToString(tok[:]), nil
}

// markerAt finds a marker line at the start of b or right after a
// newline.
func markerAt(b, line []byte) int {
	if bytes.HasPrefix(b, line) {
		return 0
	}
	if i := bytes.Index(b, append([]byte{'\n'}, line...)); i >= 0 {
		return i + 1
	}
	return -1
}

func batchError(s *Server, c Cmd, out *Output) *CommandError {
	return &CommandError{Sub: c.Name(), Stderr: out.ErrLines(), Argv: s.CmdArgv(c)}
}
