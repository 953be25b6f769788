package mcp

import (
	"context"
	"encoding/json"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/redact"
	"github.com/fleetmux/fleetmux/mcp/tools"
)

// audit records one call before its result is returned. Failures to
// persist are logged once and never fail the call.
func (s *Server) audit(ctx context.Context, req *sdk.CallToolRequest, tool, host string, raw map[string]any, parent string, start time.Time, err error) {
	dur := time.Since(start)
	ev := AuditEvent{
		Time:      start.UTC(),
		SessionID: s.sessionID,
		Host:      host,
		Tool:      tool,
		Outcome:   "ok",
		Duration:  dur,
		Parent:    parent,
		Job:       tools.NotedJobs(ctx),
	}
	ev.Client, ev.ClientVersion = clientInfo(req)
	if req != nil && req.Session != nil {
		ev.MCPSessionID = req.Session.ID()
	}
	if b, jerr := json.Marshal(s.redact(raw)); jerr == nil {
		ev.Args = b
	}
	if err != nil {
		info := tools.DescribeError(err)
		ev.Outcome = "error"
		if info.Refused {
			ev.Outcome = "refused"
		}
		ev.ErrorType = info.Type
		ev.Error = s.scrub(raw, info.Text)
	}
	if ev.Outcome == "ok" {
		s.log.Debug("audit", "tool", tool, "outcome", ev.Outcome, "duration_ms", float64(dur.Microseconds())/1000, "host", host)
	} else {
		s.log.Debug("audit", "tool", tool, "outcome", ev.Outcome, "error_type", ev.ErrorType, "duration_ms", float64(dur.Microseconds())/1000, "host", host)
	}
	if s.opts.Auditor == nil {
		return
	}
	actx := context.WithoutCancel(ctx)
	if aerr := s.opts.Auditor.Append(actx, ev); aerr != nil {
		s.auditWarn.Do(func() {
			s.log.Error("audit unavailable; tool calls continue without persisted records", "error", aerr.Error())
		})
	}
}

// scrub removes sensitive argument values from an error text that is
// about to be stored or logged. The error sent back to the client is not
// scrubbed: the client sent those values.
func (s *Server) scrub(raw map[string]any, text string) string { return redact.Scrub(raw, text) }

// redact is the audit summary of a call's raw arguments (package redact).
func (s *Server) redact(raw map[string]any) any { return redact.Args(raw) }
