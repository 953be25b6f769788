package mcp

import (
	"context"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/tools"
)

// callDeps is the server as one call sees it (tools.Deps): the client's
// session, the pipeline for nested calls and the tool's host gate.
type callDeps struct {
	s      *Server
	t      *tool // nil for the calls resources make
	req    *sdk.CallToolRequest
	parent string
	c      *tools.Call
}

// newCall is a call of t (nil: a resource read) on host.
func (s *Server) newCall(t *tool, args map[string]any, host string, req *sdk.CallToolRequest, parent string) *tools.Call {
	name := ""
	if t != nil {
		name = t.spec.Name
	}
	d := &callDeps{s: s, t: t, req: req, parent: parent}
	d.c = tools.NewCall(d, name, host, args)
	return d.c
}

func (d *callDeps) Env() *tools.Env { return d.s.env }

func (d *callDeps) WantsProgress() bool {
	return d.req != nil && d.req.Session != nil && d.req.Params != nil && d.req.Params.GetProgressToken() != nil
}

func (d *callDeps) Progress(ctx context.Context, progress, total float64, msg string) error {
	if !d.WantsProgress() {
		return nil
	}
	tok := d.req.Params.GetProgressToken()
	return d.req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: progress, Total: total, Message: msg})
}

func (d *callDeps) Warn(ctx context.Context, msg string) error {
	name := ""
	if d.t != nil {
		name = d.t.spec.Name
	}
	d.s.log.Warn(msg, "tool", name)
	if d.req == nil || d.req.Session == nil {
		return nil
	}
	//lint:ignore SA1019 warnings reach clients through MCP logging on purpose (the reference sends them; deprecated only from 2026-07-28)
	return d.req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "warning", Data: msg, Logger: "libtmux_mcp"})
}

func (d *callDeps) CallTool(ctx context.Context, name string, args map[string]any) *sdk.CallToolResult {
	return d.s.dispatch(ctx, d.req, name, args, d.t.spec.Name)
}

func (d *callDeps) LookupTool(name string) (tools.ToolInfo, bool) {
	t := d.s.byName[name]
	if t == nil {
		return tools.ToolInfo{}, false
	}
	return tools.ToolInfo{Name: name, Tier: t.tier, SelfBounded: t.spec.SelfBounded, Visible: d.s.visible(t), Spec: t.spec}, true
}

func (d *callDeps) AuditRefused(ctx context.Context, name string, args map[string]any, start time.Time, err error) {
	host := d.s.auditHost(args)
	if _, known := d.s.byName[name]; !known && args["host"] == nil {
		host = d.c.Host // an unknown tool: it would have run on the batch's host
	}
	d.s.audit(ctx, d.req, name, host, args, d.t.spec.Name, start, err)
}

func (d *callDeps) HostGate(host string) error { return d.s.hostGate(d.t, host) }

func (d *callDeps) Client() string {
	c, _ := clientInfo(d.req)
	return c
}

// run runs the tool's definition on c.
func (t *tool) run(ctx context.Context, c *tools.Call) (any, error) { return t.def.Run(ctx, c) }

// sweepBuffers deletes the buffers load_buffer left on the tmux servers
// this server used.
func (s *Server) sweepBuffers(ctx context.Context) { s.env.SweepBuffers(ctx) }
