package mcp

import (
	"context"
	"time"
)

// shutdown runs when the MCP session ends (stdin closed, SIGINT/SIGTERM):
// it deletes the libtmux_mcp_* buffers this process left on the tmux
// servers it used. Every failure is swallowed; a hard kill skips it.
func (s *Server) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.sweepBuffers(ctx)
	s.subs.close()
	s.background.Wait() // each piece is bounded (a poll's budget, at most 5 s)
	s.env.Watch.Close()
}
