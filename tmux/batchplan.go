package tmux

import (
	"bytes"
	"fmt"
)

// BatchPlan is a batched request taken apart: the command list to send
// (the caller's commands with marker lines between them) and the reading
// of what tmux printed back. Batch runs one through the server's runner;
// a caller that has the request run elsewhere (on a host, by a watcher)
// sends Cmds and reads the output with Replies.
type BatchPlan struct {
	cmds   []Cmd
	list   []Cmd
	marker string
}

// NewBatchPlan plans cmds as one request.
func NewBatchPlan(cmds ...Cmd) (*BatchPlan, error) {
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
	return &BatchPlan{cmds: cmds, list: list, marker: marker}, nil
}

// Cmds is the command list to send as one request.
func (p *BatchPlan) Cmds() []Cmd { return p.list }

// Replies splits what the request printed back per command (see Batch).
func (p *BatchPlan) Replies(s *Server, out *Output) []Reply {
	cmds := p.cmds
	replies := make([]Reply, len(cmds))
	if len(cmds) == 0 {
		return replies
	}
	rest := out.Stdout
	done := 0 // commands whose end was seen
	for done < len(cmds)-1 {
		line := []byte(fmt.Sprintf("%s-%d\n", p.marker, done))
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
		return replies
	}
	// cmds[done] failed: what it printed before failing is the rest of
	// stdout; nothing after it ran.
	replies[done] = Reply{Lines: SplitLines(rest), Ran: true, Err: batchError(s, cmds[done], out), ExitCode: out.ExitCode}
	return replies
}
