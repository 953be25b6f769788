package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/fleet/vocab"
	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/mcp/tools"
)

// Fan-out actions (fleet mode): a tool of surface.FanoutActions called with a host
// pattern or list runs on every named host, in waves of `serial` hosts
// (default: all at once, at most Options.FanoutConcurrency at a time),
// stops starting hosts after `max_failures` failures, bounds each host by
// `host_timeout`, and answers every host's outcome, its text grouping the
// hosts whose outcome reads the same.

// fanoutActionNames lists surface.FanoutActions in the tool table's order.
func (s *Server) fanoutActionNames() []string {
	var names []string
	for _, t := range s.tools {
		if surface.FanoutActions[t.spec.Name] {
			names = append(names, t.spec.Name)
		}
	}
	return names
}

// DefaultFanoutConcurrency is how many hosts a fan-out call works on at
// once unless Options.FanoutConcurrency says otherwise.
const DefaultFanoutConcurrency = 32

// HostOutcome is one host's share of a fan-out action's result.
type HostOutcome struct {
	Host      string  `json:"host"`
	Outcome   string  `json:"outcome"`
	Result    any     `json:"result"`
	Error     *string `json:"error"`
	ErrorType *string `json:"error_type"`
}

// FanoutSummary counts the hosts of a fan-out action by outcome.
type FanoutSummary struct {
	Hosts   int `json:"hosts"`
	OK      int `json:"ok"`
	Error   int `json:"error"`
	Refused int `json:"refused"`
	Skipped int `json:"skipped"`
}

// actionResult is a fan-out action's return value: buildResult turns it
// into structuredContent {hosts, summary} and the grouped text.
type actionResult struct {
	hosts   []HostOutcome
	summary FanoutSummary
	text    string
}

// hostList is what the host argument names: the hosts, and whether the
// call fans out (a pattern or a list; one plain alias does not).
type hostList struct {
	hosts  []string
	fanout bool
	label  string // the argument as written, for errors and the audit
}

// Bounds of a host argument, checked before anything runs: the entries
// of a list (each alias or glob) and its bytes. A fleet larger than this
// is named by globs, which expand to any number of selected hosts.
const (
	maxHostListEntries = 256
	maxHostListBytes   = 16 << 10
)

// ErrHostList is the class of host arguments refused before anything
// runs: too long, or naming hosts outside the selection.
var ErrHostList = errors.New("host list refused")

// unknownHostsShown is how many unknown names a refusal quotes.
const unknownHostsShown = 5

// parseHosts reads the host argument: one alias, a glob ("*", "dev-*"),
// a comma-separated list or a JSON list, whose entries may be globs.
// The whole list is checked before anything runs: at most
// maxHostListEntries entries and maxHostListBytes bytes, every alias a
// selected host, every glob matching one; duplicates are dropped.
func (s *Server) parseHosts(v any) (hostList, error) {
	var entries []string
	hl := hostList{}
	switch h := v.(type) {
	case string:
		hl.label = h
		if !strings.Contains(h, ",") && !vocab.IsPattern(h) {
			return hostList{hosts: []string{h}, label: h}, nil
		}
		entries = strings.Split(h, ",")
		for i, e := range entries {
			entries[i] = strings.TrimSpace(e)
		}
	case []string:
		hl.label = strings.Join(h, ",")
		entries = h
	default:
		return hl, tools.Expectedf("host must be a host alias, a glob, or a list of them")
	}
	hl.fanout = true
	if n := len(hl.label); n > maxHostListBytes || len(entries) > maxHostListEntries {
		return hl, &ToolError{Msg: fmt.Sprintf("host list of %d entries (%d bytes) refused: at most %d entries and %d bytes; name groups of hosts with a glob (\"dev-*\") instead", len(entries), n, maxHostListEntries, maxHostListBytes), Expected: true, Cause: ErrHostList}
	}
	seen := map[string]bool{}
	var unknown []string
	var firstErr error
	for _, e := range entries {
		if e == "" {
			return hl, tools.Expectedf("host %q: an empty entry in the host list", shortLabel(hl.label))
		}
		m, err := s.opts.Backend.Match(e)
		if err == nil && !vocab.IsPattern(e) && !slices.Contains(m, e) {
			err = fmt.Errorf("not a selected host (enable it with --hosts)")
		}
		if err != nil {
			if len(unknown) == 0 {
				firstErr = err
			}
			unknown = append(unknown, e)
			continue
		}
		names := m
		if !vocab.IsPattern(e) {
			names = []string{e}
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				hl.hosts = append(hl.hosts, n)
			}
		}
	}
	switch {
	case len(unknown) == 1:
		return hl, &HostError{Host: unknown[0], Err: firstErr}
	case len(unknown) > 1:
		shown := unknown[:min(len(unknown), unknownHostsShown)]
		quoted := make([]string, len(shown))
		for i, u := range shown {
			quoted[i] = strconv.Quote(shortLabel(u))
		}
		more := ""
		if n := len(unknown) - len(shown); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		return hl, &ToolError{Msg: fmt.Sprintf("host list refused: %d entries name no selected host (%s%s); nothing ran. Enable hosts with --hosts, or check the names with list_hosts", len(unknown), strings.Join(quoted, ", "), more), Expected: true, Cause: ErrHostList}
	}
	return hl, nil
}

// maxHostLabel bounds the host argument as it is quoted in errors and
// written to the audit record.
const maxHostLabel = 200

// shortLabel is a host argument cut to maxHostLabel bytes (on a rune
// boundary), saying how much was left out.
func shortLabel(s string) string {
	if len(s) <= maxHostLabel {
		return s
	}
	cut := maxHostLabel
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…(+%d bytes)", len(s)-cut)
}

// hostSpecificArgs names the arguments whose values mean something on
// one host only (tmux ids), which a fan-out call must not carry.
func hostSpecificArgs(args map[string]any) []string {
	var out []string
	for _, k := range []string{"pane_id", "window_id", "session_id"} {
		if v, ok := args[k].(string); ok && v != "" {
			out = append(out, k)
		}
	}
	if t, ok := args["target"].(string); ok && t != "" && strings.ContainsAny(t[:1], "%@$") {
		out = append(out, "target")
	}
	if ops, ok := args["operations"].([]any); ok {
		for _, op := range ops {
			if m, ok := op.(map[string]any); ok {
				for _, k := range []string{"pane_id", "window_id", "session_id"} {
					if v, ok := m[k].(string); ok && v != "" && !slices.Contains(out, "operations[]."+k) {
						out = append(out, "operations[]."+k)
					}
				}
			}
		}
	}
	return out
}

// rollout is how a fan-out action proceeds over its hosts.
type rollout struct {
	serial      int           // hosts per wave; 0: one wave
	maxFailures int           // stop starting hosts after this many failures; <0: never
	hostTimeout time.Duration // per host; 0: the tool's own bounds
}

func rolloutOf(args map[string]any) rollout {
	r := rollout{maxFailures: -1}
	if n, ok := args["serial"].(int); ok {
		r.serial = n
	}
	if n, ok := args["max_failures"].(int); ok {
		r.maxFailures = n
	}
	if f, ok := args["host_timeout"].(float64); ok && f > 0 {
		r.hostTimeout = time.Duration(f * float64(time.Second))
	}
	return r
}

// fanOutAction runs t on every host hl names and reports each host's
// outcome. A host that is down fails on its own (within its connect
// timeout) and never holds up the others.
func (s *Server) fanOutAction(ctx context.Context, req *sdk.CallToolRequest, t *tool, args map[string]any, hl hostList) (any, error) {
	if ids := hostSpecificArgs(args); len(ids) > 0 {
		return nil, tools.Expectedf("host %q: %s names an object on one host; on several hosts name the session (session_name) instead, or call one host at a time", hl.label, strings.Join(ids, ", "))
	}
	ro := rolloutOf(args)
	conc := s.opts.FanoutConcurrency
	if conc <= 0 {
		conc = DefaultFanoutConcurrency
	}
	waves := [][]string{hl.hosts}
	if ro.serial > 0 {
		waves = nil
		for h := range slices.Chunk(hl.hosts, ro.serial) {
			waves = append(waves, h)
		}
	}
	outcomes := make([]HostOutcome, len(hl.hosts))
	index := make(map[string]int, len(hl.hosts))
	for i, h := range hl.hosts {
		index[h] = i
		outcomes[i] = HostOutcome{Host: h, Outcome: surface.OutcomeSkipped}
	}
	var (
		mu       sync.Mutex
		failures int
		done     int
	)
	stopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ro.maxFailures >= 0 && failures >= ro.maxFailures
	}
	sem := make(chan struct{}, conc)
	parent := t.spec.Name + "@" + shortLabel(hl.label)
	for _, wave := range waves {
		var wg sync.WaitGroup
		for _, h := range wave {
			if stopped() || ctx.Err() != nil {
				break
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil || stopped() {
				if ctx.Err() == nil {
					<-sem
				}
				break
			}
			wg.Go(func() {
				defer func() { <-sem }()
				o := s.runOnHost(ctx, req, t, args, h, ro.hostTimeout, parent)
				mu.Lock()
				outcomes[index[h]] = o
				if o.Outcome != surface.OutcomeOK {
					failures++
				}
				done++
				n := done
				mu.Unlock()
				s.fanoutProgress(ctx, req, n, len(hl.hosts))
			})
		}
		wg.Wait()
		if stopped() {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := actionResult{hosts: outcomes}
	for _, o := range outcomes {
		res.summary.Hosts++
		switch o.Outcome {
		case surface.OutcomeOK:
			res.summary.OK++
		case surface.OutcomeError:
			res.summary.Error++
		case surface.OutcomeRefused:
			res.summary.Refused++
		default:
			res.summary.Skipped++
		}
	}
	res.text = groupedText(t.spec.Name, outcomes, res.summary)
	return res, nil
}

// fanoutProgress reports hosts done out of total to a client that asked
// for progress (a progress token on the call).
func (s *Server) fanoutProgress(ctx context.Context, req *sdk.CallToolRequest, done, total int) {
	if req == nil || req.Params == nil || req.Session == nil {
		return
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return
	}
	_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
		ProgressToken: tok, Progress: float64(done), Total: float64(total),
		Message: fmt.Sprintf("%d of %d hosts done", done, total),
	})
}

// runOnHost is one host's share: the host's gate (its safety cap), the
// tool, and the host's own audit record, linked to the fan-out call.
func (s *Server) runOnHost(ctx context.Context, req *sdk.CallToolRequest, t *tool, args map[string]any, host string, timeout time.Duration, parent string) HostOutcome {
	start := time.Now()
	a := maps.Clone(args)
	a["host"] = host
	for _, k := range []string{"serial", "max_failures", "host_timeout"} {
		delete(a, k)
	}
	ctx = tools.WithAuditNote(ctx) // this host's jobs, for its own record
	hctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var (
		out any
		err error
	)
	if err = s.hostGate(t, host); err == nil {
		out, err = s.runGuarded(hctx, t, s.newCall(t, a, host, req, parent))
		if err != nil && timeout > 0 && errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = tools.Expectedf("host %q: no answer within host_timeout (%s s)", host, strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64))
		}
	}
	s.audit(ctx, req, t.spec.Name, host, a, parent, start, err)
	o := HostOutcome{Host: host, Outcome: surface.OutcomeOK}
	if err != nil {
		info := tools.DescribeError(err)
		o.Outcome = surface.OutcomeError
		if info.Refused {
			o.Outcome = surface.OutcomeRefused
		}
		text, typ := info.Text, info.Type
		o.Error, o.ErrorType = &text, &typ
		return o
	}
	o.Result = out
	return o
}

// runGuarded runs the tool on one host of a fan-out, in a goroutine of
// its own, where attempt's recovery does not reach: a panic becomes the
// host's error instead of ending the process.
func (s *Server) runGuarded(ctx context.Context, t *tool, c *Call) (out any, err error) {
	defer s.recoverTool(t, &out, &err)
	return t.run(ctx, c)
}

// recoverTool, deferred, turns a panic of tool t into its error result.
func (s *Server) recoverTool(t *tool, out *any, err *error) {
	if r := recover(); r != nil {
		s.log.Error("tool panicked", "tool", t.spec.Name, "panic", fmt.Sprint(r))
		*out, *err = nil, tools.Unexpected("RuntimeError", fmt.Errorf("internal error in %s: %v", t.spec.Name, r))
	}
}

// idPattern finds tmux ids (%3, @2, $1), which differ between hosts
// without mattering to the grouping.
var idPattern = regexp.MustCompile(`([%@$])[0-9]+`)

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// compactHosts names hosts compactly: names that differ only in a
// trailing number of the same width are folded into ranges,
// "dev-[01-03,07]"; the rest are listed.
func compactHosts(hosts []string) string {
	type key struct {
		prefix string
		width  int
	}
	nums := map[key][]int{}
	var order []key
	var plain []string
	for _, h := range hosts {
		i := len(h)
		for i > 0 && h[i-1] >= '0' && h[i-1] <= '9' {
			i--
		}
		if i == len(h) {
			plain = append(plain, h)
			continue
		}
		n, err := strconv.Atoi(h[i:])
		if err != nil {
			plain = append(plain, h)
			continue
		}
		k := key{h[:i], len(h) - i}
		if _, ok := nums[k]; !ok {
			order = append(order, k)
		}
		nums[k] = append(nums[k], n)
	}
	var parts []string
	for _, k := range order {
		ns := nums[k]
		if len(ns) == 1 {
			parts = append(parts, fmt.Sprintf("%s%0*d", k.prefix, k.width, ns[0]))
			continue
		}
		slices.Sort(ns)
		var spans []string
		for i := 0; i < len(ns); {
			j := i
			for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
				j++
			}
			if j > i {
				spans = append(spans, fmt.Sprintf("%0*d-%0*d", k.width, ns[i], k.width, ns[j]))
			} else {
				spans = append(spans, fmt.Sprintf("%0*d", k.width, ns[i]))
			}
			i = j + 1
		}
		parts = append(parts, k.prefix+"["+strings.Join(spans, ",")+"]")
	}
	return strings.Join(append(parts, plain...), ", ")
}
