// Package mcp is fleetmux's MCP surface: the 56 tools of libtmux-mcp
// 0.1.0a20 (registered from one table, schemas equal to the reference's),
// resources, prompts, safety tiers and the middleware pipeline. It never
// runs a process itself: tmux commands go through package tmux over the
// runner the Backend picks for the call's host.
package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/fleetmux/fleetmux/fleet/vocab"
	"github.com/fleetmux/fleetmux/mcp/prompts"
	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/mcp/tools"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux/watch"
)

// The identity fleetmux reports in serverInfo: the reference's name, version
// and website, as the contract requires (clients and users key on the
// name). fleetmux's own name and version go in serverInfo.title (see
// Options.Version), which clients show where they have room for it.
const (
	ServerName    = "tmux"
	ServerVersion = "0.1.0a20"
	WebsiteURL    = "https://libtmux-mcp.git-pull.com/"
	// ProductName is fleetmux's own name, reported in serverInfo.title.
	ProductName = "fleetmux"
	// LocalHost is the reserved name of this machine in fleet mode.
	LocalHost = vocab.LocalHost
)

// Options configure a Server.
type Options struct {
	Settings Settings
	Backend  Backend
	Auditor  Auditor      // nil: audit only to the log
	Logger   *slog.Logger // nil: discard
	// Getenv reads per-call variables (LIBTMUX_SOCKET, TMUX_PANE, ...).
	Getenv func(string) string
	// FanoutConcurrency caps the hosts a fan-out call works on at once
	// (0: DefaultFanoutConcurrency).
	FanoutConcurrency int
	// Version is fleetmux's own version: serverInfo.title is
	// "fleetmux <Version>" ("fleetmux" when empty).
	Version string
	// Toolsets shows only the tools of these toolsets (see
	// ParseToolsets); nil shows every toolset.
	Toolsets []string
	// Extensions turns on fleetmux's additions to the reference's surface
	// in local mode (fleet mode always has them): jobs, run_command's
	// detach and deadline, progress on long calls (jobs.go).
	Extensions bool
	// MaxCallSeconds is how long a run_command whose timeout exceeds it
	// may wait before it answers "pending" with a job id (extensions
	// only; <= 0: never).
	MaxCallSeconds float64
	// Jobs persists jobs (nil: this process's memory only).
	Jobs JobStore
	// PollWaits makes wait_for_text poll even where a watcher could run
	// (the baseline of the wait benchmarks).
	PollWaits bool
}

// Server is the fleetmux MCP server.
type Server struct {
	opts      Options
	sdk       *sdk.Server
	log       *slog.Logger
	tools     []*tool
	byName    map[string]*tool
	sessionID string
	getenv    func(string) string
	// sets holds the toolsets shown; nil means all.
	sets      map[string]bool
	auditWarn sync.Once
	// background holds work a call leaves to finish after it returned
	// (wait_for_text's polls under way); shutdown waits for it.
	background sync.WaitGroup
	jobs       *tools.Jobs
	jobsWarn   sync.Once
	// env is what every call shares (package tools).
	env *tools.Env
	// subs are the pane subscriptions (extensions only; subscribe.go).
	subs *subscriptions
}

// New builds the server: instructions, the tool table filtered by tier,
// resources and prompts.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Backend == nil {
		opts.Backend = LocalBackend()
	}
	s := &Server{opts: opts, log: opts.Logger, byName: map[string]*tool{}, getenv: opts.Getenv, sessionID: newSessionID()}
	if opts.Toolsets != nil {
		s.sets = map[string]bool{}
		for _, name := range opts.Toolsets {
			if !slices.ContainsFunc(toolsets, func(ts Toolset) bool { return ts.Name == name }) {
				return nil, fmt.Errorf("mcp: unknown toolset %q; valid toolsets: %s", name, ToolsetNames())
			}
			s.sets[name] = true
		}
	}
	s.jobs = tools.NewJobs(opts.Jobs, func(err error) {
		s.jobsWarn.Do(func() {
			s.log.Error("job store unavailable; jobs of this process are kept in memory", "error", err.Error())
		})
	})
	s.env = &tools.Env{
		Backend: opts.Backend, Settings: opts.Settings, Log: s.log, Getenv: s.getenv,
		Extended: s.extended(), MaxCallSeconds: opts.MaxCallSeconds, SessionID: s.sessionID,
		Jobs: s.jobs, Auditor: opts.Auditor, AuditWarn: &s.auditWarn, Background: &s.background,
		Watch: watch.NewHub(watch.Options{Logger: opts.Logger}), PollWaits: opts.PollWaits,
	}
	instr, err := buildInstructions(opts.Settings, opts.Getenv("TMUX_PANE"), opts.Getenv("TMUX"))
	if err != nil {
		return nil, err
	}
	s.subs = newSubscriptions(s)
	so := &sdk.ServerOptions{
		Instructions: instr,
		Logger:       opts.Logger,
		Capabilities: &sdk.ServerCapabilities{
			//lint:ignore SA1019 the reference advertises logging; clients before 2026-07-28 rely on it
			Logging: &sdk.LoggingCapabilities{},
			Tools:   &sdk.ToolCapabilities{ListChanged: true},
		},
	}
	if s.extended() {
		// resources.subscribe is announced only here: plain local mode's
		// initialize stays the reference's.
		so.SubscribeHandler, so.UnsubscribeHandler = s.subs.subscribe, s.subs.unsubscribe
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: ServerName, Title: Title(opts.Version), Version: ServerVersion, WebsiteURL: WebsiteURL}, so)
	fleet := opts.Backend.Fleet()
	joined, err := joinTools(append(append(append([]*surface.Tool(nil), surface.Spec.Tools...), surface.Spec.FleetTools...), surface.JobTools()...), tools.Defs)
	if err != nil {
		return nil, err
	}
	for _, t := range joined {
		if !s.served(t.spec) {
			continue // fleet-only, or an extension that is off
		}
		t.spec = s.servedSpec(t.spec)
		s.tools = append(s.tools, t)
		s.byName[t.spec.Name] = t
	}
	for _, t := range s.tools {
		if !s.visible(t) {
			continue
		}
		s.sdk.AddTool(s.sdkTool(t, fleet), s.toolHandler(t.spec.Name))
	}
	s.addResources()
	// LIBTMUX_MCP_PROMPTS_AS_TOOLS adds no tools: see package prompts.
	_ = s.opts.Settings.PromptsAsTools
	prompts.Register(s.sdk)
	s.sdk.AddReceivingMiddleware(s.middleware)
	return s, nil
}

// Title is the serverInfo.title of fleetmux version v: "fleetmux v".
func Title(v string) string {
	if v == "" {
		return ProductName
	}
	return ProductName + " " + v
}

func newSessionID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SessionID is this process's audit session id.
func (s *Server) SessionID() string { return s.sessionID }

// SDK exposes the underlying SDK server (for transports and tests).
func (s *Server) SDK() *sdk.Server { return s.sdk }

// Run serves MCP on t until the client disconnects or ctx ends. Both
// are normal ends and return nil (the SDK's own Run logs the second at
// ERROR level); a session that ends on a transport failure returns it.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	defer s.shutdown()
	ss, err := s.sdk.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp: connect: %w", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-closed
		s.log.Info("stopped by signal")
		return nil
	case err := <-closed:
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("mcp: session: %w", err)
		}
		s.log.Info("client closed the connection")
		return nil
	}
}

// visible reports whether t is shown: its tier is within the safety tier
// and its toolset is selected. Everything that hides a tool (tools/list,
// tools/call, batches) asks this one function, so a tool outside the
// selected toolsets behaves exactly like one above the tier.
func (s *Server) visible(t *tool) bool {
	return t.tier <= s.opts.Settings.Safety && (s.sets == nil || s.sets[t.def.Set])
}

func (s *Server) sdkTool(t *tool, fleet bool) *sdk.Tool {
	ts := t.spec
	ann := ts.Annotations
	in := ts.InputSchema(fleet, t.fanout())
	for name, def := range t.defaults(s.opts.Settings) {
		if props, ok := in.Get("properties"); ok {
			if p, ok := props.(*pyfmt.OMap).Get(name); ok {
				p.(*pyfmt.OMap).Set("default", def)
			}
		}
	}
	tool := &sdk.Tool{
		Name:         ts.Name,
		Title:        ts.Title,
		Description:  surface.Description(ts.Name),
		InputSchema:  in,
		OutputSchema: ts.OutputSchema(fleet),
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint:    ann["readOnlyHint"],
			DestructiveHint: boolPtr(ann["destructiveHint"]),
			IdempotentHint:  ann["idempotentHint"],
			OpenWorldHint:   boolPtr(ann["openWorldHint"]),
		},
	}
	meta := sdk.Meta{}
	for k, v := range ts.Meta {
		meta[k] = v
	}
	tags := append([]string(nil), ts.Tags...)
	slices.Sort(tags)
	meta["fastmcp"] = map[string]any{"tags": tags}
	tool.Meta = meta
	return tool
}

func boolPtr(b bool) *bool { return &b }

// middleware is where fleetmux answers differently from the SDK, as the
// reference does: tools, prompts and resource templates are listed in
// registration order (the SDK sorts them by name); a call of an unknown
// or hidden tool gets the reference's tool error (the SDK answers with a
// JSON-RPC error); resources/read matches URIs and words errors the
// reference's way.
func (s *Server) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "tools/call":
			if cr, ok := req.(*sdk.CallToolRequest); ok && cr.Params != nil {
				if t := s.byName[cr.Params.Name]; t == nil || !s.visible(t) {
					raw, _ := decodeArgs(cr.Params.Arguments)
					return completeResult(cr.ProtocolVersion(), s.dispatch(ctx, cr, cr.Params.Name, raw, "")), nil
				}
			}
		case "resources/read":
			if rr, ok := req.(*sdk.ReadResourceRequest); ok && rr.Params != nil {
				res, err := s.readResource(ctx, rr.Params.URI)
				if err != nil {
					return nil, err
				}
				return completeResult(rr.ProtocolVersion(), res), nil
			}
		case "server/discover":
			res, err := next(ctx, method, req)
			if dr, ok := res.(*sdk.DiscoverResult); ok && err == nil {
				staticLists(dr.Capabilities)
			}
			return res, err
		case "tools/list", "prompts/list", "resources/templates/list":
			res, err := next(ctx, method, req)
			if err == nil {
				s.reorder(res)
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// completeResult marks a result that the middleware built itself (the SDK
// marks those of its own handlers) as complete when the request is of
// revision 2026-07-28 or later, whose results carry "resultType" (SEP-2322).
// The SDK lets only JSON set the field, hence the round trip (these results
// hold text only, so nothing else changes); older revisions get res as is.
func completeResult(version string, res sdk.Result) sdk.Result {
	if version < StatelessRevision {
		return res
	}
	var out sdk.Result
	switch res.(type) {
	case *sdk.CallToolResult:
		out = new(sdk.CallToolResult)
	case *sdk.ReadResourceResult:
		out = new(sdk.ReadResourceResult)
	default:
		return res
	}
	b, err := json.Marshal(res)
	if err != nil {
		return res
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return res
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	if b, err = json.Marshal(m); err != nil || json.Unmarshal(b, out) != nil {
		return res
	}
	return out
}

// staticLists drops the listChanged flags from the capabilities a revision
// 2026-07-28 client discovers: fleetmux's tools, prompts and resources are
// fixed for the life of the process, so it never sends a list_changed
// notification, and such a client would hold a subscriptions/listen stream
// open for nothing. Older revisions keep the reference's capabilities
// (initialize), flags included.
func staticLists(c *sdk.ServerCapabilities) {
	if c == nil {
		return
	}
	if c.Tools != nil {
		c.Tools.ListChanged = false
	}
	if c.Prompts != nil {
		c.Prompts.ListChanged = false
	}
	if c.Resources != nil {
		c.Resources.ListChanged = false
	}
}

// reorder puts a list result (built afresh by the SDK for each request)
// in registration order.
func (s *Server) reorder(res sdk.Result) {
	switch lr := res.(type) {
	case *sdk.ListToolsResult:
		lr.Tools = inOrder(lr.Tools, func(t *sdk.Tool) string { return t.Name }, s.toolNames())
	case *sdk.ListPromptsResult:
		lr.Prompts = inOrder(lr.Prompts, func(p *sdk.Prompt) string { return p.Name }, prompts.Names())
	case *sdk.ListResourceTemplatesResult:
		lr.ResourceTemplates = inOrder(lr.ResourceTemplates, func(t *sdk.ResourceTemplate) string { return t.URITemplate }, templateNames())
	}
}

// inOrder returns items ordered as their keys appear in order; items
// whose key is not in order follow, in their own order.
func inOrder[T any](items []T, key func(T) string, order []string) []T {
	pos := make(map[string]int, len(order))
	for i, k := range order {
		pos[k] = i + 1
	}
	out := append(make([]T, 0, len(items)), items...)
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := pos[key(out[i])], pos[key(out[j])]
		if pi == 0 || pj == 0 {
			return pi != 0 && pj == 0
		}
		return pi < pj
	})
	return out
}

// toolNames lists the served tools in registration order.
func (s *Server) toolNames() []string {
	names := make([]string, len(s.tools))
	for i, t := range s.tools {
		names[i] = t.spec.Name
	}
	return names
}

func (s *Server) toolHandler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		raw, err := decodeArgs(req.Params.Arguments)
		if err != nil {
			return errorResult(&ValidationError{Tool: name, Errors: []surface.ValErr{{Msg: "Input should be a valid dictionary", Type: "dict_type"}}}), nil
		}
		return s.dispatch(ctx, req, name, raw, ""), nil
	}
}

func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}
