package mcp

func (s *Server) addResources() {}
func (s *Server) addPrompts()   {}
func (s *Server) shutdown()     {}
