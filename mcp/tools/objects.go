package tools

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// attrPtr returns a pointer to the attribute value, or nil when tmux did
// not report it or reported it empty (libtmux drops empty fields, so the
// reference serialises them as null).
func attrPtr(a tmux.Attrs, k string) *string {
	if v, ok := a[k]; ok && v != "" {
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
func (c *Call) SessionInfo(a tmux.Attrs) SessionInfo {
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
func (c *Call) WindowInfo(a tmux.Attrs) WindowInfo {
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
// infos converts listed rows to result models, in order.
func infos[T any](rows []tmux.Attrs, info func(tmux.Attrs) T) []T {
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		out = append(out, info(r))
	}
	return out
}

// paneEdges reads a pane's position fields.
func paneEdges(a tmux.Attrs) PaneEdges {
	return PaneEdges{
		PaneLeft: intAttr(a, "pane_left"), PaneTop: intAttr(a, "pane_top"),
		PaneRight: intAttr(a, "pane_right"), PaneBottom: intAttr(a, "pane_bottom"),
		PaneAtLeft: boolAttr(a, "pane_at_left"), PaneAtRight: boolAttr(a, "pane_at_right"),
		PaneAtTop: boolAttr(a, "pane_at_top"), PaneAtBottom: boolAttr(a, "pane_at_bottom"),
	}
}

func (c *Call) PaneInfo(a tmux.Attrs, caller *CallerCheck) PaneInfo {
	return PaneInfo{
		PaneID:             a["pane_id"],
		PaneIndex:          attrPtr(a, "pane_index"),
		PaneWidth:          attrPtr(a, "pane_width"),
		PaneHeight:         attrPtr(a, "pane_height"),
		PaneEdges:          paneEdges(a),
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

// ---- caller identity ----

// callerIdentity is the MCP process's own pane, read from TMUX_PANE and
// TMUX.
type callerIdentity struct {
	PaneID     string
	SocketPath string
	HasPane    bool
}

func caller(c *Call) *callerIdentity {
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
func callerOnServer(c *Call, ctx context.Context, srv *tmux.Server) bool {
	if !c.IsLocal() {
		return false
	}
	id := caller(c)
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

// CallerCheck computes is_caller for the panes of one server lazily.
type CallerCheck struct {
	c       *Call
	ctx     context.Context
	srv     *tmux.Server
	done    bool
	matches bool
}

func (c *Call) NewCallerCheck(ctx context.Context, srv *tmux.Server) *CallerCheck {
	return &CallerCheck{c: c, ctx: ctx, srv: srv}
}

func (cc *CallerCheck) isCaller(paneID string) *bool {
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
		id := caller(cc.c)
		if id != nil && id.SocketPath != "" {
			cc.matches = samePath(id.SocketPath, effectiveSocketPath(cc.ctx, cc.srv, cc.c.Getenv))
		}
	}
	t := cc.matches
	return &t
}

// ---- filters ----

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
		dv, err := pyfmt.DecodeJSON(x)
		if err != nil {
			return nil, &ToolError{Msg: fmt.Sprintf("Invalid %s JSON: %s", name, err.Error()), Expected: true, Class: "JSONDecodeError"}
		}
		m, ok := dv.(map[string]any)
		if !ok {
			return nil, Expectedf("%s must be a JSON object, got %s", name, pyfmt.TypeName(dv))
		}
		return m, nil
	}
	return nil, Expectedf("%s must be a JSON object, got %s", name, pyfmt.TypeName(v))
}

// filterFields are the format variables libtmux 0.62 reads for every
// session, window and pane listing (its Obj fields of the universal,
// session, window and pane scopes). A filter can name any of them; other
// names never match, as they resolve to no value in libtmux.
var filterFields = setOf(`active_window_index alternate_saved_x alternate_saved_y
bracket_paste_flag config_files cursor_character cursor_flag cursor_x cursor_y
history_bytes history_limit history_size insert_flag keypad_cursor_flag
keypad_flag last_window_index line mouse_all_flag mouse_any_flag
mouse_button_flag mouse_sgr_flag mouse_standard_flag next_session_id
origin_flag pane_active pane_at_bottom pane_at_left pane_at_right pane_at_top
pane_bg pane_bottom pane_current_command pane_current_path pane_dead
pane_dead_signal pane_dead_status pane_dead_time pane_fg pane_flags
pane_floating_flag pane_format pane_height pane_id pane_in_mode pane_index
pane_input_off pane_last pane_left pane_marked pane_marked_set pane_mode
pane_path pane_pb_progress pane_pb_state pane_pid pane_pipe pane_pipe_pid
pane_right pane_search_string pane_start_command pane_start_path
pane_synchronized pane_tabs pane_title pane_top pane_tty pane_width pane_x
pane_y pane_z pane_zoomed_flag pid scroll_region_lower scroll_region_upper
session_activity session_alerts session_attached session_attached_list
session_created session_format session_group session_group_attached
session_group_attached_list session_group_list session_group_many_attached
session_group_size session_grouped session_id session_last_attached
session_many_attached session_marked session_name session_path session_stack
session_windows socket_path start_time synchronized_output_flag uid user
version window_active window_active_clients window_active_clients_list
window_active_sessions window_active_sessions_list window_activity
window_activity_flag window_bell_flag window_bigger window_cell_height
window_cell_width window_end_flag window_flags window_format window_height
window_id window_index window_last_flag window_layout window_linked
window_linked_sessions window_linked_sessions_list window_marked_flag
window_name window_offset_x window_offset_y window_panes window_raw_flags
window_silence_flag window_stack_index window_start_flag
window_visible_layout window_width window_zoomed_flag wrap_flag`)

// filterAliases are libtmux's short property names per object kind
// ("name" reads session_name on a session, window_name on a window).
// An empty target is a property that is never a string (pane.at_top is a
// bool), so it never matches.
var filterAliases = map[string]map[string]string{
	"session": {"id": "session_id", "name": "session_name"},
	"window": {"id": "window_id", "name": "window_name", "index": "window_index",
		"height": "window_height", "width": "window_width"},
	"pane": {"id": "pane_id", "index": "pane_index", "height": "pane_height",
		"width": "pane_width", "title": "pane_title", "at_top": "", "at_bottom": "",
		"at_left": "", "at_right": ""},
}

// filterRelations are libtmux properties that lead from one object to a
// related one whose fields a row already carries: a session row holds its
// active window's and pane's variables, a window row its session's and
// active pane's, a pane row its window's and session's. filterLists are
// properties holding several objects (or the server); a path through them
// never reaches a single string.
var filterRelations = map[string]map[string]string{
	"session": {"active_window": "window", "attached_window": "window", "active_pane": "pane", "attached_pane": "pane"},
	"window":  {"session": "session", "active_pane": "pane", "attached_pane": "pane"},
	"pane":    {"window": "window", "session": "session"},
}

var filterLists = setOf(`server windows panes children linked_sessions`)

// pyStrAttrs are the attribute names of a Python str: a lookup path that
// continues past a string value through one of them reaches a method,
// which never matches.
var pyStrAttrs = setOf(`capitalize casefold center count encode endswith
expandtabs find format format_map index isalnum isalpha isascii isdecimal
isdigit isidentifier islower isnumeric isprintable isspace istitle isupper
join ljust lower lstrip maketrans partition removeprefix removesuffix replace
rfind rindex rjust rpartition rsplit rstrip split splitlines startswith strip
swapcase title translate upper zfill`)

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// filterCond is one parsed filter: the lookup path (the key without its
// operator, split at "__"), the operator and the wanted value.
type filterCond struct {
	path []string
	op   string
	want any
	re   *regexp.Regexp
}

// splitFilterKey separates "<path>__<op>"; a key without "__" is an exact
// match on the whole key. ok is false for an unknown operator.
func splitFilterKey(key string) (path, op string, ok bool) {
	i := strings.LastIndex(key, "__")
	if i < 0 {
		return key, "exact", true
	}
	path, op = key[:i], key[i+2:]
	for _, o := range filterOps {
		if o == op {
			return path, op, true
		}
	}
	return path, op, false
}

// filterExtraFields returns the format variables the filters of a listing
// read beyond base, so the listing can ask tmux for them too. Invalid
// filters are ignored here; filterRows reports them.
func filterExtraFields(kind string, filtersArg any, base []string) []string {
	filters, err := coerceDictArg("filters", filtersArg)
	if err != nil || len(filters) == 0 {
		return nil
	}
	have := map[string]bool{}
	for _, f := range base {
		have[f] = true
	}
	var extra []string
	for key := range filters {
		path, _, _ := splitFilterKey(key)
		k := kind
		for _, seg := range strings.Split(path, "__") {
			if next, ok := filterRelations[k][seg]; ok {
				k = next
				continue
			}
			if a, ok := filterAliases[k][seg]; ok {
				seg = a
			}
			if filterFields[seg] && !have[seg] {
				have[seg] = true
				extra = append(extra, seg)
			}
		}
	}
	slices.Sort(extra)
	return extra
}

// filterRows keeps the rows of one object kind ("session", "window",
// "pane") matching every filter, with libtmux QueryList semantics: the
// lookup path is resolved like libtmux's keygetter, an empty tmux value is
// absent (libtmux drops empty fields) and never matches.
func filterRows(kind string, rows []tmux.Attrs, filtersArg any) ([]tmux.Attrs, error) {
	filters, err := coerceDictArg("filters", filtersArg)
	if err != nil || len(filters) == 0 {
		return rows, err
	}
	var conds []filterCond
	keys := slices.Sorted(maps.Keys(filters))
	for _, key := range keys {
		path, op, ok := splitFilterKey(key)
		if !ok {
			return nil, Expectedf("Invalid filter operator '%s' in '%s'. Valid operators: %s", op, key, strings.Join(filterOps, ", "))
		}
		cd := filterCond{path: strings.Split(path, "__"), op: op, want: filters[key]}
		if pat, isStr := cd.want.(string); isStr && (op == "regex" || op == "iregex") {
			if op == "iregex" {
				pat = "(?i)" + pat
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil, Expectedf("Invalid regex pattern: %v", err)
			}
			cd.re = re
		}
		conds = append(conds, cd)
	}
	out := []tmux.Attrs{}
	for _, r := range rows {
		ok := true
		for _, cd := range conds {
			v, isStr := lookupPath(kind, r, cd.path)
			if !isStr || v == "" || !matchOp(cd.op, v, cd.want, cd.re) {
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

// lookupPath resolves a filter path on a row as libtmux's keygetter does
// on an object: each segment that names an attribute descends into it,
// other segments are skipped. It reports the value and whether the path
// ended on a string (not on the object itself or a non-string property).
func lookupPath(kind string, r tmux.Attrs, path []string) (string, bool) {
	var val string
	onString := false
	for _, seg := range path {
		if onString {
			if pyStrAttrs[seg] {
				return "", false
			}
			continue
		}
		if next, ok := filterRelations[kind][seg]; ok {
			kind = next
			continue
		}
		if filterLists[seg] {
			return "", false
		}
		field := seg
		if a, ok := filterAliases[kind][seg]; ok {
			if a == "" {
				return "", false
			}
			field = a
		}
		if !filterFields[field] {
			continue
		}
		val = r[field]
		if val == "" {
			return "", false
		}
		onString = true
	}
	return val, onString
}

// matchOp applies one QueryList lookup operator to an attribute value v.
// want is the filter value: a string from an object argument, or any JSON
// value from the JSON-text form (a list makes in/nin membership tests;
// other non-strings never match).
func matchOp(op, v string, want any, re *regexp.Regexp) bool {
	if list, ok := want.([]any); ok {
		in := false
		for _, e := range list {
			if s, ok := e.(string); ok && s == v {
				in = true
			}
		}
		switch op {
		case "in":
			return in
		case "nin":
			return !in
		}
		return false
	}
	w, ok := want.(string)
	if !ok {
		return false
	}
	lv, lw := strings.ToLower(v), strings.ToLower(w)
	switch op {
	case "exact", "eq":
		return v == w
	case "iexact":
		return lv == lw
	case "contains", "in":
		return strings.Contains(v, w)
	case "nin":
		return !strings.Contains(v, w)
	case "icontains":
		return strings.Contains(lv, lw)
	case "startswith":
		return strings.HasPrefix(v, w)
	case "istartswith":
		return strings.HasPrefix(lv, lw)
	case "endswith":
		return strings.HasSuffix(v, w)
	case "iendswith":
		return strings.HasSuffix(lv, lw)
	case "regex", "iregex":
		return re != nil && re.MatchString(v)
	}
	return false
}
