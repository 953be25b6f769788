package mcp

func (s *Server) shutdown() {}
