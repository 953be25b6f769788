package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// InProcess connects an MCP client to the server over in-memory
// transports. The returned close function ends both sides.
func (s *Server) InProcess(ctx context.Context, clientName string) (*sdk.ClientSession, func(), error) {
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.sdk.Connect(ctx, st, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp: connect server: %w", err)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: clientName, Version: "0"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		_ = ss.Close()
		return nil, nil, fmt.Errorf("mcp: connect client: %w", err)
	}
	return cs, func() {
		_ = cs.Close()
		_ = ss.Close()
		s.shutdown()
	}, nil
}
