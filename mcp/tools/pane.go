package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/tmux/ttyinput"
)

// Pane tools: input (send_keys, paste_text), reading (capture_pane,
// snapshot_pane, display_message, get_pane_info) and lifecycle
// (kill_pane, respawn_pane, set_pane_title, clear_pane, pipe_pane).
// Layout, selection and copy-mode tools live in tools_pane_layout.go.

// PasteLoadTimeout bounds the load-buffer child of paste_text, as the
// reference's 5 s subprocess timeout does (a variable so tests can shorten it).
var PasteLoadTimeout = 5 * time.Second

// snapshotFormatVars are the display-message fields of snapshot_pane, in
// the reference's order (constants.SNAPSHOT_FORMAT_VARS).
var snapshotFormatVars = []string{
	"cursor_x", "cursor_y", "pane_width", "pane_height", "pane_in_mode",
	"pane_mode", "scroll_position", "history_size", "pane_title",
	"pane_current_command", "pane_current_path", "pane_left", "pane_top",
	"pane_right", "pane_bottom", "pane_at_left", "pane_at_right",
	"pane_at_top", "pane_at_bottom", "pane_tty", "pane_pid", "pane_dead",
	"alternate_on",
}

// paneTailLines keeps the last limit lines the way the reference's Python slice
// does: nil keeps everything; 0 keeps everything but still reports every
// line as dropped; -n keeps all but the first n lines and reports
// len+n dropped (a quirk of the reference server, kept).
func paneTailLines(lines []string, limit *int) (kept []string, truncated bool, dropped int) {
	if limit == nil || len(lines) <= *limit {
		return lines, false, 0
	}
	m := *limit
	dropped = len(lines) - m
	start := 0
	switch {
	case m > 0:
		start = len(lines) - m
	case m < 0:
		start = min(-m, len(lines))
	}
	return lines[start:], true, dropped
}

// panePyStrip trims what Python's str.strip() removes.
func panePyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
	})
}

// guardCallerPane reports whether paneID is the MCP server's own pane on
// srv (the reference server's guard comparator).
func guardCallerPane(c *Call, ctx context.Context, srv *tmux.Server, paneID string) bool {
	id := caller(c)
	if id == nil || !id.HasPane || id.PaneID != paneID {
		return false
	}
	return callerOnServer(c, ctx, srv)
}

type toolSendKeysArgs struct {
	Keys                            string
	SuppressHistory, Literal, Enter bool
}

func toolSendKeys(ctx context.Context, c *Call, a toolSendKeysArgs) (any, error) {
	text := a.Keys
	if a.SuppressHistory {
		text = " " + text
	}
	srv := c.srv
	if id, ok := directPaneID(c); ok {
		// One tmux invocation: the keys, then Enter as a second command.
		cmds := []tmux.Cmd{tmux.SendKeys(id, a.Literal, text)}
		if a.Enter {
			cmds = append(cmds, tmux.SendEnter(id))
		}
		out, err := srv.Exec(ctx, cmds...)
		if err != nil {
			return nil, err
		}
		if tmux.PaneMissing(out) {
			return nil, &tmux.PaneNotFoundError{ID: id}
		}
		if err := srv.OutputUnreachable(out); err != nil {
			return nil, err // no tmux server took the keys
		}
		return "Keys sent to pane " + id, nil
	}
	p, err := c.resolvePane(ctx, srv)
	if err != nil {
		return nil, err
	}
	id := p["pane_id"]
	// tmux's verdict is not checked, as in the reference.
	if _, err := srv.Exec(ctx, tmux.SendKeys(id, a.Literal, text)); err != nil {
		return nil, err
	}
	if a.Enter {
		if _, err := srv.Exec(ctx, tmux.SendEnter(id)); err != nil {
			return nil, err
		}
	}
	return "Keys sent to pane " + id, nil
}

// pasteBufferName is a fresh agent-owned buffer name for paste_text.
func pasteBufferName() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40 // a version-4 UUID, like uuid4().hex
	b[8] = b[8]&0x3f | 0x80
	return "libtmux_mcp_" + hex.EncodeToString(b[:]) + "_paste", nil
}

type toolPasteTextArgs struct {
	Text    string
	Bracket bool
}

func toolPasteText(ctx context.Context, c *Call, a toolPasteTextArgs) (any, error) {
	srv := c.srv
	name, err := pasteBufferName()
	if err != nil {
		return nil, Unexpected("RuntimeError", err)
	}
	data := []byte(a.Text)
	bracket := a.Bracket
	// One request: the lookup, the load from stdin and the paste (which
	// deletes the buffer), under the load's 5 s bound as the reference's
	// load-buffer child has it.
	lctx, cancel := context.WithTimeout(ctx, PasteLoadTimeout)
	defer cancel()
	var load, paste tmux.Cmd
	p, replies, err := tmux.PaneAct(lctx, srv, paneTarget(c), func(id string) []tmux.Cmd {
		load, paste = tmux.LoadBuffer(name, data), tmux.PasteBuffer(id, name, true, bracket)
		return []tmux.Cmd{load, paste}
	})
	if err == nil && (len(replies) < 2 || !replies[1].Ran || replies[1].Err != nil) {
		// The buffer may be left behind: delete it, best effort.
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PasteLoadTimeout)
			defer cancel()
			_, _ = srv.Exec(dctx, tmux.DeleteBuffer(name))
		}()
	}
	if err != nil {
		if p == nil && ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
			return nil, Expectedf("load-buffer timeout after 5s for %s", pyfmt.Repr(name))
		}
		return nil, err
	}
	if r := replies[0]; r.Err != nil {
		detail := strings.TrimSpace(strings.ToValidUTF8(strings.Join(r.Err.Stderr, "\n"), "\uFFFD"))
		if detail == "" {
			detail = fmt.Sprintf("Command %s returned non-zero exit status %d.", pyfmt.List(srv.CmdArgv(load)), r.ExitCode)
		}
		return nil, Expectedf("load-buffer failed: %s", detail)
	}
	if err := srv.Judge([]tmux.Cmd{paste}, replies[1:]); err != nil {
		return nil, err
	}
	return "Text pasted to pane " + p["pane_id"], nil
}

type toolCapturePaneArgs struct {
	Start, End, MaxLines *int
}

func toolCapturePane(ctx context.Context, c *Call, a toolCapturePaneArgs) (any, error) {
	srv := c.srv
	target, ok := directPaneID(c)
	if !ok {
		p, err := c.resolvePane(ctx, srv)
		if err != nil {
			return nil, err
		}
		target = p["pane_id"]
	}
	out, err := srv.Exec(ctx, tmux.CapturePane(target, a.Start, a.End))
	if err != nil {
		return nil, err
	}
	if tmux.PaneMissing(out) {
		return nil, &tmux.PaneNotFoundError{ID: target}
	}
	if err := srv.OutputUnreachable(out); err != nil {
		return nil, err
	}
	kept, truncated, dropped := paneTailLines(out.Lines(), a.MaxLines)
	body := strings.Join(kept, "\n")
	if truncated {
		return fmt.Sprintf("[... truncated %d lines ...]\n", dropped) + body, nil
	}
	return body, nil
}

type toolSnapshotPaneArgs struct {
	MaxLines *int
}

// toolSnapshotPane reads the pane's state and text in one request with
// its lookup when pane_id is a plain id.
func toolSnapshotPane(ctx context.Context, c *Call, a toolSnapshotPaneArgs) (any, error) {
	srv := c.srv
	vars := make([]string, len(snapshotFormatVars))
	for i, v := range snapshotFormatVars {
		vars[i] = "#{" + v + "}"
	}
	var req *ttyinput.Request
	p, replies, err := tmux.PaneRead(ctx, srv, paneTarget(c), func(id string) []tmux.Cmd {
		req = c.inputProbe(id)
		return append([]tmux.Cmd{tmux.DisplayMessage(id, strings.Join(vars, tmux.Sep)), tmux.CapturePane(id, nil, nil)}, probeCmds(req)...)
	})
	if err != nil {
		return nil, err
	}
	id, lines := p["pane_id"], replies[0].Lines
	raw := ""
	if len(lines) > 0 {
		raw = lines[0]
	}
	parts := strings.Split(raw, tmux.Sep)
	f := make(tmux.Attrs, len(snapshotFormatVars))
	for i, v := range snapshotFormatVars {
		if i < len(parts) {
			f[v] = parts[i]
		} else {
			f[v] = ""
		}
	}
	kept, truncated, dropped := paneTailLines(replies[1].Lines, a.MaxLines)
	num := func(k string) int {
		if n := intAttr(f, k); n != nil {
			return *n
		}
		return 0
	}
	snap := PaneSnapshot{
		PaneID:                id,
		Content:               strings.Join(kept, "\n"),
		CursorX:               num("cursor_x"),
		CursorY:               num("cursor_y"),
		PaneWidth:             num("pane_width"),
		PaneHeight:            num("pane_height"),
		PaneEdges:             paneEdges(f),
		PaneTty:               nonEmpty(f, "pane_tty"),
		PanePid:               nonEmpty(f, "pane_pid"),
		PaneDead:              boolAttr(f, "pane_dead"),
		AlternateOn:           boolAttr(f, "alternate_on"),
		PaneInMode:            f["pane_in_mode"] == "1",
		PaneMode:              nonEmpty(f, "pane_mode"),
		ScrollPosition:        intAttr(f, "scroll_position"),
		HistorySize:           num("history_size"),
		Title:                 nonEmpty(f, "pane_title"),
		PaneCurrentCommand:    nonEmpty(f, "pane_current_command"),
		PaneCurrentPath:       nonEmpty(f, "pane_current_path"),
		IsCaller:              c.NewCallerCheck(ctx, srv).isCaller(id),
		ContentTruncated:      truncated,
		ContentTruncatedLines: dropped,
		Host:                  c.HostField(),
	}
	if !c.env.Extended {
		return snap, nil
	}
	return PaneSnapshotInput{snap, c.inputFields(ctx, req, replies)}, nil
}

// checkDisplayFormat refuses what display_message must not expand: the
// reference's own refusal of "#(" first, word for word (clients may match
// it), then the allowlist, which also refuses what builds "#(" inside
// tmux.
func checkDisplayFormat(a toolDisplayMessageArgs) error {
	format := a.FormatString
	if strings.Contains(format, "#(") {
		return Expectedf("tmux format jobs (#(...)) are not allowed in display_message")
	}
	if err := tmux.CheckFormat(format); err != nil {
		return Expectedf("display_message: %v. Allowed: #{variable}, the modifiers b d q n w t =N pN, #{?condition,a,b} and comparisons such as #{==:a,b}", err)
	}
	return nil
}

type toolDisplayMessageArgs struct {
	FormatString string // checked by checkDisplayFormat
}

// toolDisplayMessage finds the pane and expands the format in one
// request when pane_id is a plain id (tmux's verdict on the format is
// not checked, as in the reference).
func toolDisplayMessage(ctx context.Context, c *Call, a toolDisplayMessageArgs) (any, error) {
	_, replies, err := tmux.PaneRead(ctx, c.srv, paneTarget(c), func(id string) []tmux.Cmd {
		return []tmux.Cmd{tmux.DisplayMessage(id, a.FormatString)}
	})
	if err != nil {
		return nil, err
	}
	return strings.Join(replies[0].Lines, "\n"), nil
}

// toolGetPaneInfo resolves the pane itself: with the extensions on, the
// input probe goes in the same request as the pane's lookup
// (tmux.PaneRead: one request for a plain pane id).
func toolGetPaneInfo(ctx context.Context, c *Call, _ noArgs) (any, error) {
	if !c.env.Extended {
		p, err := c.resolvePane(ctx, c.srv)
		if err != nil {
			return nil, err
		}
		return c.PaneInfo(p, c.NewCallerCheck(ctx, c.srv)), nil
	}
	var req *ttyinput.Request
	p, replies, err := tmux.PaneRead(ctx, c.srv, paneTarget(c), func(id string) []tmux.Cmd {
		req = c.inputProbe(id)
		return probeCmds(req)
	})
	if err != nil {
		return nil, err
	}
	return PaneInfoInput{c.PaneInfo(p, c.NewCallerCheck(ctx, c.srv)), c.inputFields(ctx, req, replies)}, nil
}

type toolKillPaneArgs struct {
	PaneID string
}

func toolKillPane(ctx context.Context, c *Call, a toolKillPaneArgs) (any, error) {
	srv := c.srv
	want := a.PaneID
	// The guard compares the requested id before any lookup.
	if guardCallerPane(c, ctx, srv, want) {
		return nil, Refusedf("Refusing to kill the pane running this MCP server. Use a manual tmux command if intended.")
	}
	id, err := actOnPane(c, ctx, false, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.KillPane(id)} })
	if err != nil {
		return nil, err
	}
	return "Pane killed: " + id, nil
}

// checkSpawnEnv checks the environment arguments of the spawn tools.
func checkSpawnEnv(a spawnArgs) error {
	_, err := a.env()
	return err
}

type toolRespawnPaneArgs struct {
	spawnArgs
	PaneID         string
	StartDirectory *string
	Kill           bool
	Shell          string
}

func toolRespawnPane(ctx context.Context, c *Call, a toolRespawnPaneArgs) (any, error) {
	env, _ := a.env() // checked by checkSpawnEnv
	srv, want := c.srv, a.PaneID
	// The pane is found by its exact id, so the guard can compare the
	// requested id; the lookup still decides first.
	if guardCallerPane(c, ctx, srv, want) {
		if _, err := tmux.PaneByID(ctx, srv, want); err != nil {
			return nil, err
		}
		return nil, Refusedf("Refusing to respawn the pane running this MCP server. Use a manual tmux command if intended.")
	}
	var dir *string
	if d := a.StartDirectory; d != nil {
		expanded := expandHome(c, *d)
		if expanded == "" {
			expanded = "." // what pathlib makes of an empty path
		}
		dir = &expanded
	}
	kill, shell := a.Kill, a.Shell
	return changePane(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.RespawnPane(id, kill, dir, env, shell)} })
}

type toolSetPaneTitleArgs struct {
	Title string
}

func toolSetPaneTitle(ctx context.Context, c *Call, a toolSetPaneTitleArgs) (any, error) {
	title := a.Title
	return changePane(c, ctx, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.SetPaneTitle(id, title)} })
}

func toolClearPane(ctx context.Context, c *Call, _ noArgs) (any, error) {
	// One request, two commands: nothing can be drawn between the
	// terminal reset and the scrollback purge. stderr is not checked.
	id, err := actOnPane(c, ctx, true, func(id string) []tmux.Cmd {
		return []tmux.Cmd{tmux.ResetTerminal(id), tmux.ClearHistory(id)}
	})
	if err != nil {
		return nil, err
	}
	return "Pane cleared: " + id, nil
}

type toolPipePaneArgs struct {
	OutputPath *string
	Append     bool
}

func toolPipePane(ctx context.Context, c *Call, a toolPipePaneArgs) (any, error) {
	path := a.OutputPath
	if path == nil {
		id, err := actOnPane(c, ctx, false, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.PipePane(id, "")} })
		if err != nil {
			return nil, err
		}
		return "Piping stopped for pane " + id, nil
	}
	if panePyStrip(*path) == "" {
		// The pane is looked up first: a missing pane is the error.
		if _, err := c.resolvePane(ctx, c.srv); err != nil {
			return nil, err
		}
		return nil, Expectedf("output_path must be a non-empty path, or None to stop piping.")
	}
	command := tmux.PipeCommand(*path, a.Append)
	id, err := actOnPane(c, ctx, false, func(id string) []tmux.Cmd { return []tmux.Cmd{tmux.PipePane(id, command)} })
	if err != nil {
		return nil, err
	}
	return "Piping pane " + id + " to " + *path, nil
}
