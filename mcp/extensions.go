package mcp

import (
	"github.com/fleetmux/fleetmux/mcp/surface"
)

// extended reports whether the extensions are on.
func (s *Server) extended() bool { return s.opts.Extensions || s.opts.Backend.Fleet() }

// served reports whether this configuration serves the tool: extension
// tools in fleet mode or with --extensions, the other fleet-only tools
// (no host parameter: list_hosts) in fleet mode, the reference's always.
func (s *Server) served(ts *surface.Tool) bool {
	switch {
	case surface.IsJobTool(ts.Name):
		return s.extended()
	case ts.NoHostParam:
		return s.opts.Backend.Fleet()
	}
	return true
}

// servedSpec is the spec a tool is served with: with the extensions on,
// the reference tools gain their extension parameters (run_command's detach)
// and result fields; in local mode, fleet-only parameters are left out.
func (s *Server) servedSpec(ts *surface.Tool) *surface.Tool {
	if !s.extended() {
		return ts
	}
	out := ts
	if params := surface.JobsSpec.Params[ts.Name]; len(params) > 0 {
		out = surface.WithParams(out, params)
	}
	for _, ext := range []string{surface.ToolExtModel(ts.Returns, ts.Name), ts.Returns + surface.ExtModelSuffix} {
		if _, ok := surface.Spec.Models[ext]; ok {
			if out == ts {
				c := *ts
				out = &c
			}
			out.Returns = ext
			break
		}
	}
	if !s.opts.Backend.Fleet() {
		for _, jt := range surface.JobsSpec.Tools {
			if jt.Name == ts.Name {
				for _, p := range jt.FleetParams {
					out = surface.WithoutParam(out, p)
				}
			}
		}
	}
	return out
}
