package tools

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// Options, environment and read-only hook
// introspection. Values are parsed the way libtmux 0.62 parses
// show-options / show-hooks output, since that is what the reference
// returns.

// scopedTarget is a resolved scope/target pair: the -t id (empty for the
// server object) and the validated scope (empty when none was given).
type scopedTarget struct {
	id    string
	scope string
}

// scopeArgs are the scope, target and global_ arguments of the option
// and hook tools, embedded in their argument structs.
type scopeArgs struct {
	Scope, Target *string
	Global        bool `arg:"global_"`
}

// resolveScopedTarget applies the shared scope/target rules: an unknown
// scope or a target without scope is refused; a target is resolved per
// scope (session by name, window by id, pane by id).
func resolveScopedTarget(ctx context.Context, srv *tmux.Server, a scopeArgs) (scopedTarget, error) {
	var st scopedTarget
	scope := a.Scope
	if scope != nil {
		if !tmux.ValidScope(*scope) {
			return st, Expectedf("Invalid scope: %s. Valid: pane, server, session, window", pyfmt.Repr(*scope))
		}
		st.scope = *scope
	}
	target := a.Target
	if target == nil {
		return st, nil
	}
	if scope == nil {
		return st, Expectedf("scope is required when target is specified")
	}
	var err error
	var row tmux.Attrs
	switch st.scope {
	case "session":
		row, err = tmux.ResolveSession(ctx, srv, target, nil)
		st.id = row["session_id"]
	case "window":
		row, err = tmux.WindowByID(ctx, srv, *target)
		st.id = row["window_id"]
	case "pane":
		row, err = tmux.PaneByID(ctx, srv, *target)
		st.id = row["pane_id"]
	}
	return st, err
}

// optionTarget is where the option and hook commands of the call look.
func optionTarget(a scopeArgs, st scopedTarget) tmux.OptionTarget {
	return tmux.OptionTarget{ID: st.id, Global: a.Global, Scope: tmux.Scope(st.scope)}
}

// checkOptionName refuses option names tmux would expand as formats.
// optionArg is the option argument of show_option and set_option.
type optionArg struct {
	Option string // checked by checkOptionName
}

func checkOptionName(a optionArg) error {
	if err := tmux.CheckName("option", a.Option); err != nil {
		return Expectedf("%v", err)
	}
	return nil
}

// checkHookName refuses hook names tmux would expand as formats.
func checkHookName(a showHookArgs) error {
	if err := tmux.CheckName("hook", a.HookName); err != nil {
		return Expectedf("%v", err)
	}
	return nil
}

// optionError turns the first stderr line of an option/hook command into
// the tmux error libtmux raises (no subcommand prefix), or nil.
func optionError(srv *tmux.Server, out *tmux.Output, cmd tmux.Cmd) error {
	lines := nonEmptyLines(out.ErrLines())
	if len(lines) == 0 {
		return nil
	}
	return &tmux.CommandError{Stderr: lines[:1], Argv: srv.CmdArgv(cmd)}
}

// nonEmptyLines drops empty lines, as libtmux does with stderr.
func nonEmptyLines(lines []string) []string {
	out := []string{}
	for _, l := range lines {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// optionCmd resolves the call's scope and target, runs the option or
// hook command build makes for them and returns what tmux printed, or
// tmux's complaint as the error libtmux raises (optionError).
func optionCmd(ctx context.Context, c *Call, a scopeArgs, build func(tmux.OptionTarget) tmux.Cmd) (*tmux.Output, error) {
	st, err := resolveScopedTarget(ctx, c.srv, a)
	if err != nil {
		return nil, err
	}
	cmd := build(optionTarget(a, st))
	out, err := c.srv.Exec(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return out, optionError(c.srv, out, cmd)
}

type showOptionArgs struct {
	scopeArgs
	optionArg
}

func showOption(ctx context.Context, c *Call, a showOptionArgs) (any, error) {
	option := a.Option
	out, err := optionCmd(ctx, c, a.scopeArgs, func(t tmux.OptionTarget) tmux.Cmd { return tmux.ShowOptions(t, option) })
	if err != nil {
		return nil, err
	}
	return OptionResult{Option: option, Value: optionValue(option, out.Lines())}, nil
}

type setOptionArgs struct {
	scopeArgs
	optionArg
	Value string
}

func setOption(ctx context.Context, c *Call, a setOptionArgs) (any, error) {
	option, value := a.Option, a.Value
	if _, err := optionCmd(ctx, c, a.scopeArgs, func(t tmux.OptionTarget) tmux.Cmd { return tmux.SetOption(t, option, value) }); err != nil {
		return nil, err
	}
	return OptionSetResult{Option: option, Value: value, Status: "set"}, nil
}

// ---- show-options output parsing (libtmux.options) ----

// rawOption is one "name value" line; val is nil for a bare name.
type rawOption struct {
	key string
	val *string
}

// parseOptionLines splits each line into name and value: shell-style
// when the line is exactly two words, else at the first space.
func parseOptionLines(lines []string) []rawOption {
	var out []rawOption
	index := map[string]int{}
	for _, item := range lines {
		var key string
		var val *string
		if strings.Contains(item, " ") {
			if toks, err := pyShlexSplit(item); err == nil && len(toks) == 2 {
				key, val = toks[0], &toks[1]
			} else {
				k, v, _ := strings.Cut(item, " ")
				v = strings.TrimRight(v, "\n")
				key, val = k, &v
			}
		} else {
			key = item
		}
		key = pyfmt.Strip(key)
		if key == "" {
			continue
		}
		if i, ok := index[key]; ok {
			out[i].val = val
			continue
		}
		index[key] = len(out)
		out = append(out, rawOption{key, val})
	}
	return out
}

// sparse is libtmux's SparseArray (or the plain dict it uses for
// terminal-features): index → value in insertion order.
type sparse struct {
	idx  []int
	vals []*string
}

func (s *sparse) set(i int, v *string) {
	for n, have := range s.idx {
		if have == i {
			s.vals[n] = v
			return
		}
	}
	s.idx = append(s.idx, i)
	s.vals = append(s.vals, v)
}

func (s *sparse) get(i int) (*string, bool) {
	for n, have := range s.idx {
		if have == i {
			return s.vals[n], true
		}
	}
	return nil, false
}

// sortedVals is SparseArray.iter_values: values by ascending index.
func (s *sparse) sortedVals() []*string {
	order := make([]int, len(s.idx))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return s.idx[order[a]] < s.idx[order[b]] })
	out := make([]*string, len(order))
	for i, n := range order {
		out[i] = s.vals[n]
	}
	return out
}

// arrayKeyRE is libtmux's array-key pattern; \w is Unicode-aware in
// Python, hence the classes.
var arrayKeyRE = regexp.MustCompile(`^([\p{L}\p{N}_-]+)(?:\[(\d+)\])?(\*)?`)

// explodedOption is one entry after array explosion: either a scalar
// (arr nil) or an array.
type explodedOption struct {
	key    string
	scalar *string
	arr    *sparse
}

// explodeArrays folds "name[N]" keys into arrays (the inherited "*"
// marker stays on the name). With forceArray (hooks) scalars become
// one-element arrays at index 0.
func explodeArrays(raw []rawOption, forceArray bool) []*explodedOption {
	var out []*explodedOption
	byKey := map[string]*explodedOption{}
	put := func(e *explodedOption) {
		if old, ok := byKey[e.key]; ok {
			*old = *e
			return
		}
		byKey[e.key] = e
		out = append(out, e)
	}
	for _, r := range raw {
		if !strings.Contains(r.key, "[") {
			if forceArray {
				arr := &sparse{}
				if r.val != nil {
					arr.set(0, r.val)
				}
				put(&explodedOption{key: r.key, arr: arr})
			} else {
				put(&explodedOption{key: r.key, scalar: r.val})
			}
			continue
		}
		m := arrayKeyRE.FindStringSubmatch(r.key)
		if m == nil || m[2] == "" {
			continue
		}
		idx, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		key := m[1] + m[3]
		e, ok := byKey[key]
		if !ok || e.arr == nil {
			e = &explodedOption{key: key, arr: &sparse{}}
			put(e)
			e = byKey[key]
		}
		e.arr.set(idx, r.val)
	}
	return out
}

// optionValue is libtmux's show_option result for the lines tmux printed,
// rendered as JSON values.
func optionValue(option string, lines []string) any {
	if len(lines) == 0 {
		return nil
	}
	raw := parseOptionLines(lines)
	find := func(k string) (rawOption, bool) {
		for _, r := range raw {
			if r.key == k {
				return r, true
			}
		}
		return rawOption{}, false
	}
	key := option
	if _, ok := find(option); !ok {
		if _, ok := find(option + "*"); ok {
			key = option + "*"
		}
	}
	if r, ok := find(key); ok {
		return convertOptionValue(r.val)
	}
	exploded := explodeArrays(raw, false)
	var hit *explodedOption
	for _, name := range []string{option, option + "*"} {
		for _, e := range exploded {
			if e.key == name {
				hit = e
				break
			}
		}
		if hit != nil {
			break
		}
	}
	if hit == nil {
		return nil
	}
	if hit.arr == nil {
		return convertOptionValue(hit.scalar)
	}
	switch hit.key {
	case "command-alias":
		m := pyfmt.NewOMap()
		for _, v := range hit.arr.sortedVals() {
			if v == nil {
				continue
			}
			if alias, cmd, ok := strings.Cut(*v, "="); ok {
				m.Set(alias, cmd)
			}
		}
		return m
	case "terminal-overrides":
		m := pyfmt.NewOMap()
		for _, v := range hit.arr.sortedVals() {
			if v == nil {
				continue
			}
			parts := strings.Split(*v, ":")
			term := parts[0]
			cur, ok := m.Get(term)
			if !ok {
				cur = pyfmt.NewOMap()
				m.Set(term, cur)
			}
			feats := cur.(*pyfmt.OMap)
			for _, f := range parts[1:] {
				if k, val, ok := strings.Cut(f, "="); ok {
					if allASCIIDigits(val) {
						feats.Set(k, pyIntNumber(val))
					} else {
						feats.Set(k, val)
					}
				} else if f != "" {
					feats.Set(f, nil)
				}
			}
		}
		return m
	}
	m := pyfmt.NewOMap()
	for n, i := range hit.arr.idx {
		if v := hit.arr.vals[n]; v != nil {
			m.Set(strconv.Itoa(i), *v)
		} else {
			m.Set(strconv.Itoa(i), nil)
		}
	}
	return m
}

// convertOptionValue is libtmux's convert_value: digits → int, on/off →
// booleans, anything else unchanged.
func convertOptionValue(v *string) any {
	switch {
	case v == nil:
		return nil
	case allASCIIDigits(*v):
		return pyIntNumber(*v)
	case *v == "on":
		return true
	case *v == "off":
		return false
	}
	return *v
}

// allASCIIDigits is str.isdigit for ASCII text ("" is not digits).
func allASCIIDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// pyIntNumber is int(digits) as a JSON number of any size.
func pyIntNumber(digits string) json.Number {
	d := strings.TrimLeft(digits, "0")
	if d == "" {
		d = "0"
	}
	return json.Number(d)
}

// pyShlexSplit is Python's shlex.split(s) (POSIX rules, no comments).
func pyShlexSplit(s string) ([]string, error) {
	var toks []string
	var cur strings.Builder
	inTok := false
	const (
		plain = iota
		single
		double
	)
	state := plain
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch state {
		case plain:
			switch r {
			case ' ', '\t', '\r', '\n':
				if inTok {
					toks = append(toks, cur.String())
					cur.Reset()
					inTok = false
				}
			case '\\':
				if i+1 >= len(rs) {
					//lint:ignore ST1005 Python shlex's message, kept verbatim (the reference reports it)
					return nil, errors.New("No escaped character")
				}
				i++
				cur.WriteRune(rs[i])
				inTok = true
			case '\'':
				state, inTok = single, true
			case '"':
				state, inTok = double, true
			default:
				cur.WriteRune(r)
				inTok = true
			}
		case single:
			if r == '\'' {
				state = plain
			} else {
				cur.WriteRune(r)
			}
		case double:
			switch r {
			case '"':
				state = plain
			case '\\':
				if i+1 >= len(rs) {
					//lint:ignore ST1005 Python shlex's message, kept verbatim (the reference reports it)
					return nil, errors.New("No escaped character")
				}
				i++
				if n := rs[i]; n != '"' && n != '\\' {
					cur.WriteRune('\\')
				}
				cur.WriteRune(rs[i])
			default:
				cur.WriteRune(r)
			}
		}
	}
	if state != plain {
		//lint:ignore ST1005 Python shlex's message, kept verbatim (the reference reports it)
		return nil, errors.New("No closing quotation")
	}
	if inTok {
		toks = append(toks, cur.String())
	}
	return toks, nil
}

// ---- environment ----

func showEnvironment(ctx context.Context, c *Call, _ noArgs) (any, error) {
	srv := c.srv
	session, err := sessionArg(c, ctx)
	if err != nil {
		return nil, err
	}
	out, err := srv.Exec(ctx, tmux.ShowEnvironment(session))
	if err != nil {
		return nil, err
	}
	vars := pyfmt.NewOMap()
	for _, line := range out.Lines() {
		// "-NAME" (marked for removal) has no "=" and is keyed as printed.
		if k, v, ok := strings.Cut(line, "="); ok {
			vars.Set(k, v)
		} else {
			vars.Set(line, true)
		}
	}
	return EnvironmentResult{Variables: vars}, nil
}

type setEnvironmentArgs struct {
	Name, Value string
}

func setEnvironment(ctx context.Context, c *Call, a setEnvironmentArgs) (any, error) {
	srv := c.srv
	name, value := a.Name, a.Value
	session, err := sessionArg(c, ctx)
	if err != nil {
		return nil, err
	}
	out, err := srv.Exec(ctx, tmux.SetEnvironment(session, name, value))
	if err != nil {
		return nil, err
	}
	// libtmux raises a plain ValueError here, which the reference reports
	// as an unexpected error.
	if lines := nonEmptyLines(out.ErrLines()); len(lines) > 0 {
		return nil, &ToolError{Msg: "Unexpected error: ValueError: tmux set-environment stderr: " + pyfmt.List(lines), Class: "ValueError"}
	}
	return EnvironmentSetResult{Name: name, Value: value, Status: "set"}, nil
}

// ---- hooks ----

// hookLines reads "NAME[INDEX] COMMAND" lines into name → command,
// keeping first-seen order; lines without a command are skipped.
func hookLines(lines []string, into map[string]string, order *[]string) {
	for _, item := range lines {
		s := strings.TrimLeftFunc(item, pyfmt.IsSpace)
		end := strings.IndexFunc(s, pyfmt.IsSpace)
		if end < 0 {
			continue
		}
		key := s[:end]
		val := strings.TrimLeftFunc(s[end:], pyfmt.IsSpace)
		if val == "" {
			continue
		}
		if allASCIIDigits(val) {
			val = string(pyIntNumber(val))
		}
		if _, seen := into[key]; !seen {
			*order = append(*order, key)
		}
		into[key] = val
	}
}

// splitHookKey splits "name[3]" into ("name", 3); anything else is
// returned whole with no index.
func splitHookKey(key string) (string, *int) {
	if strings.HasSuffix(key, "]") {
		if i := strings.LastIndex(key, "["); i >= 0 {
			n, err := strconv.Atoi(strings.TrimPrefix(pyfmt.Strip(key[i+1:len(key)-1]), "+"))
			if err == nil {
				return key[:i], &n
			}
		}
	}
	return key, nil
}

type showHooksArgs struct {
	scopeArgs
}

func showHooks(ctx context.Context, c *Call, a showHooksArgs) (any, error) {
	srv := c.srv
	st, err := resolveScopedTarget(ctx, srv, a.scopeArgs)
	if err != nil {
		return nil, err
	}
	hooks := map[string]string{}
	var order []string
	out, err := srv.Exec(ctx, tmux.ShowHooks(optionTarget(a.scopeArgs, st)))
	if err != nil {
		return nil, err
	}
	hookLines(out.Lines(), hooks, &order)
	if st.scope == "server" && a.Target == nil {
		// tmux keeps -g pane/window hooks in the global window tree.
		more := map[string]string{}
		var moreOrder []string
		out, err := srv.Exec(ctx, tmux.ShowGlobalWindowHooks())
		if err != nil {
			return nil, err
		}
		hookLines(out.Lines(), more, &moreOrder)
		for _, k := range moreOrder {
			if _, ok := hooks[k]; !ok {
				hooks[k] = more[k]
				order = append(order, k)
			}
		}
	}
	sort.Strings(order)
	entries := []HookEntry{}
	for _, k := range order {
		name, idx := splitHookKey(k)
		entries = append(entries, HookEntry{HookName: name, Index: idx, Command: hooks[k]})
	}
	return HookListResult{Entries: entries}, nil
}

// hookIndexRE matches an index suffix on a requested hook name.
var hookIndexRE = regexp.MustCompile(`\[(\d+)\]$`)

// hookAttr is the attribute name libtmux looks a hook up by.
func hookAttr(name string) string {
	return strings.ReplaceAll(strings.TrimLeft(name, "%"), "-", "_")
}

type showHookArgs struct {
	scopeArgs
	HookName string // checked by checkHookName
}

func showHook(ctx context.Context, c *Call, a showHookArgs) (any, error) {
	hook := a.HookName
	out, err := optionCmd(ctx, c, a.scopeArgs, func(t tmux.OptionTarget) tmux.Cmd { return tmux.ShowHook(t, hook) })
	if err != nil {
		// tmux answers an unset hook this way; every other error (an
		// unknown hook name, a wrong scope) is the caller's to fix.
		if strings.Contains(err.Error(), "too many arguments") {
			return HookListResult{Entries: []HookEntry{}}, nil
		}
		return nil, err
	}
	arrays := map[string]*sparse{}
	for _, e := range explodeArrays(parseOptionLines(out.Lines()), true) {
		arrays[hookAttr(e.key)] = e.arr
	}
	entries := []HookEntry{}
	attr := hookAttr(hook)
	if m := hookIndexRE.FindStringSubmatchIndex(attr); m != nil {
		arr := arrays[attr[:m[0]]]
		i, err := strconv.Atoi(attr[m[2]:m[3]])
		if arr == nil || err != nil {
			return HookListResult{Entries: entries}, nil
		}
		v, ok := arr.get(i)
		if !ok || v == nil {
			return HookListResult{Entries: entries}, nil
		}
		name, idx := splitHookKey(hook)
		return HookListResult{Entries: append(entries, HookEntry{HookName: name, Index: idx, Command: *v})}, nil
	}
	if arr := arrays[attr]; arr != nil {
		name, _ := splitHookKey(hook)
		for n, i := range arr.idx {
			cmd := "None"
			if v := arr.vals[n]; v != nil {
				cmd = *v
			}
			i := i
			entries = append(entries, HookEntry{HookName: name, Index: &i, Command: cmd})
		}
	}
	return HookListResult{Entries: entries}, nil
}
