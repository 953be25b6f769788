package tools

import (
	"context"
	"errors"
	"time"

	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/tmux/ttyinput"
)

// The input state of a pane (issue 22, part 3), an extension: with the
// extensions on, get_pane_info and snapshot_pane end their request with
// the probe of package tmux/ttyinput, and wait_for_text can stop when
// the pane waits for input (stop_on_input).

// inputProbe prepares the probe of pane for the call's host, or nil when
// the extensions are off (the reference's requests stay as they are).
func (c *Call) inputProbe(pane string) *ttyinput.Request {
	if !c.env.Extended || !tmux.IsPaneID(pane) {
		return nil
	}
	req, err := ttyinput.NewRequest(pane, c.IsLocal())
	if err != nil {
		c.env.Log.Debug("input probe", "pane", pane, "error", err)
		return nil
	}
	return req
}

// inputFields judges the probe's replies (the last of replies). What the
// probe could not read is unknown (waiting_for_input null), never an
// error of the tool: the rest of the result stands.
func (c *Call) inputFields(ctx context.Context, req *ttyinput.Request, replies []tmux.Reply) InputFields {
	state := ttyinput.Unknown
	if req != nil {
		rep, err := req.Read(ctx, replies)
		if err == nil {
			state = rep.State
		} else if !errors.Is(err, ttyinput.ErrNoLine) {
			c.env.Log.Debug("input probe", "host", c.Host, "error", err)
		}
	}
	return inputFieldsOf(state)
}

// inputFieldsOf is the pair of fields for state.
func inputFieldsOf(state ttyinput.State) InputFields {
	s := string(state)
	return InputFields{WaitingForInput: state.Waiting(), InputState: &s}
}

// probeCmds are req's commands (none for a nil req).
func probeCmds(req *ttyinput.Request) []tmux.Cmd {
	if req == nil {
		return nil
	}
	return req.Cmds()
}

// inputEvery is how often a wait with stop_on_input looks at the pane's
// input state, at most.
const inputEvery = 250 * time.Millisecond

// inputCheck is wait_for_text's stop_on_input: a probe of the pane at
// most every inputEvery, as a request of its own under the wait's
// budget. A nil *inputCheck never stops a wait.
type inputCheck struct {
	c      *Call
	b      *boundedTmux
	target string
	last   time.Time
}

// wake is how often a watched wait must wake to look (0: never).
func (in *inputCheck) wake() time.Duration {
	if in == nil {
		return 0
	}
	return inputEvery
}

// waiting probes the pane when the last probe is inputEvery old and
// reports whether its foreground program waits for input (line,
// password, keys). A probe that fails says no: the wait goes on, and its
// polls report a pane that went away.
func (in *inputCheck) waiting(ctx context.Context) bool {
	if in == nil || time.Since(in.last) < inputEvery {
		return false
	}
	in.last = time.Now()
	req := in.c.inputProbe(in.target)
	if req == nil {
		return false
	}
	replies, err := in.b.batch(ctx, req.Cmds()...)
	if err != nil {
		return false
	}
	rep, err := req.Read(ctx, replies)
	if err != nil {
		return false
	}
	w := rep.Waiting()
	return w != nil && *w
}
