package mcp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/fleetmux/fleetmux/tmux"
)

// strPtr returns a pointer to the attribute value, or nil when tmux did
// not report it.
func attrPtr(a tmux.Attrs, k string) *string {
	if v, ok := a[k]; ok {
		return &v
	}
	return nil
}

// intAttr parses a numeric attribute; empty or missing is nil.
func intAttr(a tmux.Attrs, k string) *int {
	v, ok := a[k]
	if !ok || v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil
	}
	return &n
}

// boolAttr parses a tmux flag; empty or missing is nil.
func boolAttr(a tmux.Attrs, k string) *bool {
	v, ok := a[k]
	if !ok || v == "" {
		return nil
	}
	b := v == "1"
	return &b
}

func nonEmpty(a tmux.Attrs, k string) *string {
	if v, ok := a[k]; ok && v != "" {
		return &v
	}
	return nil
}

// sessionInfo serialises a listed session.
func (c *Call) sessionInfo(a tmux.Attrs) SessionInfo {
	n, _ := strconv.Atoi(a["session_windows"])
	return SessionInfo{
		SessionID:       a["session_id"],
		SessionName:     attrPtr(a, "session_name"),
		WindowCount:     n,
		SessionAttached: attrPtr(a, "session_attached"),
		SessionCreated:  attrPtr(a, "session_created"),
		ActivePaneID:    nonEmpty(a, "pane_id"),
		Host:            c.HostField(),
	}
}

// windowInfo serialises a listed window.
func (c *Call) windowInfo(a tmux.Attrs) WindowInfo {
	n, _ := strconv.Atoi(a["window_panes"])
	return WindowInfo{
		WindowID:     a["window_id"],
		WindowName:   attrPtr(a, "window_name"),
		WindowIndex:  attrPtr(a, "window_index"),
		SessionID:    attrPtr(a, "session_id"),
		SessionName:  attrPtr(a, "session_name"),
		PaneCount:    n,
		WindowLayout: attrPtr(a, "window_layout"),
		WindowActive: attrPtr(a, "window_active"),
		WindowWidth:  attrPtr(a, "window_width"),
		WindowHeight: attrPtr(a, "window_height"),
		ActivePaneID: nonEmpty(a, "pane_id"),
		Host:         c.HostField(),
	}
}

// paneInfo serialises a listed pane; caller is the per-call caller check.
func (c *Call) paneInfo(a tmux.Attrs, caller *callerCheck) PaneInfo {
	return PaneInfo{
		PaneID:             a["pane_id"],
		PaneIndex:          attrPtr(a, "pane_index"),
		PaneWidth:          attrPtr(a, "pane_width"),
		PaneHeight:         attrPtr(a, "pane_height"),
		PaneLeft:           intAttr(a, "pane_left"),
		PaneTop:            intAttr(a, "pane_top"),
		PaneRight:          intAttr(a, "pane_right"),
		PaneBottom:         intAttr(a, "pane_bottom"),
		PaneAtLeft:         boolAttr(a, "pane_at_left"),
		PaneAtRight:        boolAttr(a, "pane_at_right"),
		PaneAtTop:          boolAttr(a, "pane_at_top"),
		PaneAtBottom:       boolAttr(a, "pane_at_bottom"),
		PaneTty:            attrPtr(a, "pane_tty"),
		PaneCurrentCommand: attrPtr(a, "pane_current_command"),
		PaneCurrentPath:    attrPtr(a, "pane_current_path"),
		PanePid:            attrPtr(a, "pane_pid"),
		PaneTitle:          attrPtr(a, "pane_title"),
		PaneActive:         attrPtr(a, "pane_active"),
		WindowID:           attrPtr(a, "window_id"),
		SessionID:          attrPtr(a, "session_id"),
		IsCaller:           caller.isCaller(a["pane_id"]),
		Host:               c.HostField(),
	}
}

// ---- caller identity (BEHAVIOR.md §6) ----

// callerIdentity is the MCP process's own pane, read from TMUX_PANE and
// TMUX.
type callerIdentity struct {
	PaneID     string
	SocketPath string
	HasPane    bool
}

func (c *Call) caller() *callerIdentity {
	pane := c.Getenv("TMUX_PANE")
	tmuxEnv := c.Getenv("TMUX")
	if pane == "" && tmuxEnv == "" {
		return nil
	}
	id := &callerIdentity{PaneID: pane, HasPane: pane != ""}
	if tmuxEnv != "" {
		id.SocketPath = strings.SplitN(tmuxEnv, ",", 3)[0]
	}
	return id
}

// effectiveSocketPath is the path of the target server's socket: the
// configured one, tmux's own answer, or the default location.
func effectiveSocketPath(ctx context.Context, srv *tmux.Server, getenv func(string) string) string {
	if srv.SocketPath != "" {
		return srv.SocketPath
	}
	if lines, err := srv.Display(ctx, "", "#{socket_path}"); err == nil && len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
		return strings.TrimSpace(lines[0])
	}
	dir := getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	name := srv.SocketName
	if name == "" {
		name = "default"
	}
	return filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Geteuid()), name)
}

func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return a == b
	}
	return ra == rb
}

// callerOnServer is the guard comparator (biased to block).
func (c *Call) callerOnServer(ctx context.Context, srv *tmux.Server) bool {
	if !c.IsLocal() {
		return false
	}
	id := c.caller()
	if id == nil {
		return false
	}
	if id.SocketPath == "" {
		return id.HasPane
	}
	target := effectiveSocketPath(ctx, srv, c.Getenv)
	if target == "" {
		return true
	}
	if samePath(id.SocketPath, target) {
		return true
	}
	name := srv.SocketName
	if name == "" {
		name = "default"
	}
	return filepath.Base(id.SocketPath) == name
}

// callerCheck computes is_caller for the panes of one server lazily.
type callerCheck struct {
	c       *Call
	ctx     context.Context
	srv     *tmux.Server
	done    bool
	matches bool
}

func (c *Call) newCallerCheck(ctx context.Context, srv *tmux.Server) *callerCheck {
	return &callerCheck{c: c, ctx: ctx, srv: srv}
}

func (cc *callerCheck) isCaller(paneID string) *bool {
	if cc == nil {
		return nil
	}
	pane := cc.c.Getenv("TMUX_PANE")
	if pane == "" {
		return nil
	}
	f := false
	if paneID != pane || !cc.c.IsLocal() {
		return &f
	}
	if !cc.done {
		cc.done = true
		id := cc.c.caller()
		if id != nil && id.SocketPath != "" {
			cc.matches = samePath(id.SocketPath, effectiveSocketPath(cc.ctx, cc.srv, cc.c.Getenv))
		}
	}
	t := cc.matches
	return &t
}

// ---- filters (BEHAVIOR.md §5.5) ----

var filterOps = []string{"contains", "endswith", "eq", "exact", "icontains", "iendswith", "iexact", "in", "iregex", "istartswith", "nin", "regex", "startswith"}

// coerceDictArg accepts an object or a JSON text of one.
func coerceDictArg(name string, v any) (map[string]any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return x, nil
	case string:
		if x == "" {
			return nil, nil
		}
		dv, err := decodePyJSON(x)
		if err != nil {
			return nil, &ToolError{Msg: fmt.Sprintf("Invalid %s JSON: %s", name, err.Error()), Expected: true, Class: "JSONDecodeError"}
		}
		m, ok := dv.(map[string]any)
		if !ok {
			return nil, expectedf("%s must be a JSON object, got %s", name, pyTypeName(dv))
		}
		return m, nil
	}
	return nil, expectedf("%s must be a JSON object, got %s", name, pyTypeName(v))
}

// filterRows keeps the rows matching every filter.
func filterRows(rows []tmux.Attrs, filtersArg any) ([]tmux.Attrs, error) {
	filters, err := coerceDictArg("filters", filtersArg)
	if err != nil || len(filters) == 0 {
		return rows, err
	}
	type cond struct {
		field, op, val string
		re             *regexp.Regexp
	}
	var conds []cond
	keys := make([]string, 0, len(filters))
	for k := range filters {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, key := range keys {
		field, op := key, "exact"
		if i := strings.LastIndex(key, "__"); i >= 0 {
			field, op = key[:i], key[i+2:]
			valid := false
			for _, o := range filterOps {
				if o == op {
					valid = true
				}
			}
			if !valid {
				return nil, expectedf("Invalid filter operator '%s' in '%s'. Valid operators: %s", op, key, strings.Join(filterOps, ", "))
			}
		}
		val := fmt.Sprint(filters[key])
		if s, ok := filters[key].(string); ok {
			val = s
		}
		cd := cond{field: field, op: op, val: val}
		if op == "regex" || op == "iregex" {
			pat := val
			if op == "iregex" {
				pat = "(?i)" + pat
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil, expectedf("Invalid regex pattern: %v", err)
			}
			cd.re = re
		}
		conds = append(conds, cd)
	}
	out := []tmux.Attrs{}
	for _, r := range rows {
		ok := true
		for _, cd := range conds {
			v, present := r[cd.field]
			if !present || !matchOp(cd.op, v, cd.val, cd.re) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func matchOp(op, v, want string, re *regexp.Regexp) bool {
	lv, lw := strings.ToLower(v), strings.ToLower(want)
	switch op {
	case "exact", "eq":
		return v == want
	case "iexact":
		return lv == lw
	case "contains":
		return strings.Contains(v, want)
	case "icontains":
		return strings.Contains(lv, lw)
	case "startswith":
		return strings.HasPrefix(v, want)
	case "istartswith":
		return strings.HasPrefix(lv, lw)
	case "endswith":
		return strings.HasSuffix(v, want)
	case "iendswith":
		return strings.HasSuffix(lv, lw)
	case "in":
		return strings.Contains(want, v)
	case "nin":
		return !strings.Contains(want, v)
	case "regex", "iregex":
		return re != nil && re.MatchString(v)
	}
	return false
}
