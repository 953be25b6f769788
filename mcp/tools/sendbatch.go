package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// keysOp is one validated send_keys_batch operation.
type keysOp struct {
	keys                         string
	paneID, sessionName          *string
	sessionID, windowID          *string
	enter, literal, suppressHist bool
}

func keysOpFrom(v any) keysOp {
	m, _ := v.(map[string]any)
	str := func(k string) *string {
		if s, ok := m[k].(string); ok {
			return &s
		}
		return nil
	}
	flag := func(k string) bool { b, _ := m[k].(bool); return b }
	op := keysOp{
		paneID: str("pane_id"), sessionName: str("session_name"),
		sessionID: str("session_id"), windowID: str("window_id"),
		enter: flag("enter"), literal: flag("literal"), suppressHist: flag("suppress_history"),
	}
	if k := str("keys"); k != nil {
		op.keys = *k
	}
	return op
}

// sendCmd is the send-keys command of an operation's text (one leading
// space when the operation asks for history suppression).
func (op keysOp) sendCmd(paneID string) tmux.Cmd {
	text := op.keys
	if op.suppressHist {
		text = " " + text
	}
	return tmux.SendKeysRaw(paneID, op.literal, text)
}

// sendKeysBatch sends ordered raw-input operations, each to its own pane.
// With timeout set, every send is a child bounded by
// the time left in the batch.
type sendKeysBatchArgs struct {
	Operations any     // a list of operation objects once validated
	OnError    *string // nil reads as "stop"
	Timeout    *float64
}

func sendKeysBatch(ctx context.Context, c *Call, a sendKeysBatchArgs) (any, error) {
	raw, _ := a.Operations.([]any)
	if len(raw) == 0 {
		return nil, Expectedf("operations must not be empty")
	}
	onError := "stop"
	if a.OnError != nil {
		onError = *a.OnError
	}
	if onError != "stop" && onError != "continue" {
		return nil, Expectedf("on_error must be 'stop' or 'continue'")
	}
	srv := c.srv
	timeout := a.Timeout
	batchStart := time.Now()
	var deadline time.Time
	if timeout != nil {
		deadline = batchStart.Add(durSeconds(*timeout))
	}
	res := SendKeysBatchResult{Results: []SendKeysOperationResult{}}
	for i, v := range raw {
		op := keysOpFrom(v)
		if timeout != nil && time.Now().After(deadline) {
			msg := batchTimeoutMsg(*timeout)
			res.Results = append(res.Results, SendKeysOperationResult{Index: i, PaneID: op.paneID, Error: &msg})
			if onError == "stop" {
				res.StoppedAt = &i
				break
			}
			continue
		}
		started := time.Now()
		paneID, err := sendKeysOp(ctx, srv, op, timeout, deadline)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		row := SendKeysOperationResult{Index: i, Success: err == nil, ElapsedSeconds: PyFloat(time.Since(started).Seconds())}
		if paneID != "" {
			row.PaneID = &paneID
		}
		if err != nil {
			info := DescribeError(err)
			msg := info.Text
			if info.Suggestion != "" {
				msg += "\n" + info.Suggestion
			}
			row.Error = &msg
		}
		res.Results = append(res.Results, row)
		if err != nil && onError == "stop" {
			res.StoppedAt = &i
			break
		}
	}
	for _, r := range res.Results {
		if r.Success {
			res.Succeeded++
		} else {
			res.Failed++
		}
	}
	return res, nil
}

func batchTimeoutMsg(timeout float64) string {
	return fmt.Sprintf("batch execution exceeded timeout of %ss", pyfmt.Float(timeout))
}

// sendKeysOp resolves the operation's pane and sends its keys and the
// optional Enter. It returns the resolved pane id ("" when resolution
// failed).
func sendKeysOp(ctx context.Context, srv *tmux.Server, op keysOp, timeout *float64, deadline time.Time) (string, error) {
	pane, err := tmux.ResolvePane(ctx, srv, tmux.PaneTarget{
		PaneID: op.paneID, SessionName: op.sessionName,
		SessionID: op.sessionID, WindowID: op.windowID,
	})
	if err != nil {
		return "", err
	}
	paneID := pane["pane_id"]
	cmds := []tmux.Cmd{op.sendCmd(paneID)}
	if op.enter {
		cmds = append(cmds, tmux.SendEnter(paneID))
	}
	for _, cmd := range cmds {
		if timeout == nil {
			// Like send_keys: tmux's complaints are not checked.
			if _, err := srv.Exec(ctx, cmd); err != nil {
				return paneID, err
			}
			continue
		}
		if err := timedSend(ctx, srv, cmd, *timeout, deadline); err != nil {
			return paneID, err
		}
	}
	return paneID, nil
}

// timedSend runs one send-keys child bounded by the batch deadline.
func timedSend(ctx context.Context, srv *tmux.Server, cmd tmux.Cmd, timeout float64, deadline time.Time) error {
	left := time.Until(deadline)
	if left <= 0 {
		return Expectedf("%s", batchTimeoutMsg(timeout))
	}
	cctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	out, err := srv.Exec(cctx, cmd)
	if err != nil {
		if ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return Expectedf("%s", batchTimeoutMsg(timeout))
		}
		return err
	}
	if out.ExitCode != 0 {
		detail := pyfmt.Strip(strings.ToValidUTF8(string(out.Stderr), "\uFFFD"))
		if detail == "" {
			detail = fmt.Sprintf("Command %s returned non-zero exit status %d.", pyfmt.List(srv.PlainArgv(cmd)), out.ExitCode)
		}
		return Expectedf("send-keys failed: %s", detail)
	}
	return nil
}
