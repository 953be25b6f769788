package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/mcp/tools"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

// dispatch runs one tools/call (or a nested batch call) through the
// pipeline, outermost first: response limiter, error-to-result
// conversion, audit, readonly retry, safety gate, validation, tool.
func (s *Server) dispatch(ctx context.Context, req *sdk.CallToolRequest, name string, raw map[string]any, parent string) *sdk.CallToolResult {
	start := time.Now()
	ctx = tools.WithAuditNote(ctx) // the jobs the call starts, for its record
	t := s.byName[name]
	host := s.auditHost(raw)
	var (
		res *sdk.CallToolResult
		err error
	)
	if t == nil || !s.visible(t) {
		err = &ToolError{Msg: "Unknown tool: " + pyfmt.Repr(name), Class: "NotFoundError"}
	} else {
		res, err = s.invoke(ctx, req, t, raw, host, parent)
	}
	s.audit(ctx, req, name, host, raw, parent, start, err)
	if err != nil {
		info := tools.DescribeError(err)
		logged := firstLine(s.scrub(raw, info.Text))
		if info.Expected {
			s.log.Warn("Error in tools/call: "+info.Type+": "+logged, "tool", name)
		} else {
			s.log.Error("Error in tools/call: "+info.Type+": "+logged, "tool", name)
		}
		res = errorResult(err)
	}
	// display_message is limited too (a divergence): a short format can
	// still expand to a large text through long variable values.
	if t != nil && (t.spec.ResponseLimited || t.def.Limited) {
		res = limitResponse(res, responseLimitBytes)
	}
	return res
}

// auditHost is the host field of a call's audit record: "local" in local
// mode, else the call's host argument (a fan-out list joined with commas),
// bounded in length.
func (s *Server) auditHost(raw map[string]any) string {
	host := LocalHost
	if s.opts.Backend.Fleet() {
		switch h := raw["host"].(type) {
		case string:
			host = h
		case []any:
			names := make([]string, 0, len(h))
			for _, e := range h {
				names = append(names, fmt.Sprint(e))
			}
			host = strings.Join(names, ",")
		}
		host = shortLabel(host)
	}
	return host
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// invoke applies the retry, safety and validation layers and builds the
// success result.
func (s *Server) invoke(ctx context.Context, req *sdk.CallToolRequest, t *tool, raw map[string]any, host, parent string) (*sdk.CallToolResult, error) {
	retry := t.tier == TierReadonly && !t.spec.SelfBounded
	out, err := s.attempt(ctx, req, t, raw, host, parent)
	if err != nil && retry && tools.IsTransient(err) && ctx.Err() == nil {
		s.log.Warn("retrying readonly tool after transient tmux error", "logger", "libtmux_mcp.retry", "tool", t.spec.Name, "error", s.scrub(raw, err.Error()))
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return nil, err
		}
		out, err = s.attempt(ctx, req, t, raw, host, parent)
	}
	if err != nil {
		return nil, err
	}
	return buildResult(t.spec, out)
}

// attempt is the safety gate, argument validation and the tool itself.
func (s *Server) attempt(ctx context.Context, req *sdk.CallToolRequest, t *tool, raw map[string]any, host, parent string) (out any, err error) {
	defer s.recoverTool(t, &out, &err)
	if t.tier > s.opts.Settings.Safety {
		return nil, tools.Refusedf("Tool '%s' is not available at the current safety level. Set LIBTMUX_SAFETY=destructive to enable destructive tools.", t.spec.Name)
	}
	var extra map[string]any
	fleet := s.opts.Backend.Fleet()
	if fleet && !t.spec.NoHostParam {
		extra = map[string]any{"host": LocalHost}
		if surface.FanoutActions[t.spec.Name] {
			extra["serial"], extra["max_failures"], extra["host_timeout"] = nil, nil, nil
		}
	}
	args, err := surface.Validate(t.spec, raw, t.defaults(s.opts.Settings), extra)
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			return nil, s.withSuggestion(req, ve)
		}
		return nil, err
	}
	if !fleet || t.spec.NoHostParam {
		return t.run(ctx, s.newCall(t, args, LocalHost, req, parent))
	}
	hl, err := s.parseHosts(args["host"])
	if err != nil {
		return nil, err
	}
	if hl.fanout {
		switch {
		case t.fanout():
			return s.fanOut(ctx, req, t, args, hl, parent)
		case surface.FanoutActions[t.spec.Name]:
			return s.fanOutAction(ctx, req, t, args, hl)
		case t.tier == TierDestructive:
			return nil, tools.Refusedf("host %q: %s is destructive and never runs on several hosts at once; name one host", hl.label, t.spec.Name)
		}
		return nil, tools.Expectedf("host %q: %s runs on one host; host patterns and lists are accepted by the listing tools (list_servers, list_sessions, list_windows, list_panes, search_panes, get_server_info) and by %s", hl.label, t.spec.Name, strings.Join(s.fanoutActionNames(), ", "))
	}
	hostArg := hl.hosts[0]
	if err := s.hostGate(t, hostArg); err != nil {
		return nil, err
	}
	return t.run(ctx, s.newCall(t, args, hostArg, req, parent))
}

// hostGate refuses a host outside the selection or a tool above the
// host's safety cap.
func (s *Server) hostGate(t *tool, host string) error {
	if hosts, err := s.opts.Backend.Match(host); err != nil || len(hosts) != 1 || hosts[0] != host {
		if err == nil {
			err = fmt.Errorf("not a selected host (enable it with --hosts)")
		}
		return &HostError{Host: host, Err: err}
	}
	if capTier, ok := s.opts.Backend.Cap(host); ok && t.tier > capTier {
		return tools.Refusedf("Tool '%s' (tier %s) is not available on host '%s', which is capped at %s by --host-safety.", t.spec.Name, t.tier, host, capTier)
	}
	return nil
}

// fanOut runs a listing tool on every matching host concurrently and
// merges the results. Hosts that fail are reported, not fatal.
func (s *Server) fanOut(ctx context.Context, req *sdk.CallToolRequest, t *tool, args map[string]any, hl hostList, parent string) (any, error) {
	hosts := hl.hosts
	type res struct {
		out any
		err error
	}
	results := make([]res, len(hosts))
	var wg sync.WaitGroup
	conc := s.opts.FanoutConcurrency
	if conc <= 0 {
		conc = DefaultFanoutConcurrency
	}
	sem := make(chan struct{}, conc)
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := s.hostGate(t, h); err != nil {
				results[i] = res{nil, err}
				return
			}
			a := make(map[string]any, len(args))
			for k, v := range args {
				a[k] = v
			}
			a["host"] = h
			c := s.newCall(t, a, h, req, parent)
			out, err := s.runGuarded(ctx, t, c)
			results[i] = res{out, err}
		}()
	}
	wg.Wait()
	var failures []string
	outs := make([]any, 0, len(hosts))
	for i, r := range results {
		if r.err != nil {
			failures = append(failures, fmt.Sprintf("%s: %s", hosts[i], tools.DescribeError(r.err).Text))
			continue
		}
		outs = append(outs, r.out)
	}
	if failures == nil {
		failures = []string{}
	}
	merged, err := t.def.Merge(outs)
	if err != nil {
		return nil, err
	}
	return fanoutResult{merged, failures}, nil
}

// fanoutResult is a merged fan-out result: the value plus the hosts that
// failed (reported in _meta and, for lists, in a trailing text block).
type fanoutResult struct {
	value    any
	failures []string
}

// withSuggestion adds the unknown-argument hint to a validation failure.
func (s *Server) withSuggestion(req *sdk.CallToolRequest, ve *ValidationError) error {
	unknown := ve.Unexpected()
	if len(unknown) == 0 {
		return ve
	}
	sugg := fmt.Sprintf("Remove or correct the unrecognized argument(s): %s.", strings.Join(unknown, ", "))
	for _, u := range unknown {
		if u == "wait_for_previous" {
			who := "some clients (e.g. Gemini CLI)"
			if label := clientLabel(req); label != "" {
				who = "your client (" + label + ")"
			}
			sugg += " wait_for_previous is a scheduling flag " + who + " can leak into batched tool calls; retry the call without it."
			break
		}
	}
	return &ToolError{Msg: ve.Error(), Suggestion: sugg, Expected: true, Class: "ValidationError", Cause: ve}
}

func clientLabel(req *sdk.CallToolRequest) string {
	if req == nil {
		return ""
	}
	ci := req.ClientInfo()
	if ci == nil {
		return ""
	}
	return strings.TrimSpace(ci.Name + " " + ci.Version)
}

// clientInfo returns the client name and version for the audit.
func clientInfo(req *sdk.CallToolRequest) (string, string) {
	if req == nil {
		return "", ""
	}
	ci := req.ClientInfo()
	if ci == nil {
		return "", ""
	}
	return ci.Name, ci.Version
}
