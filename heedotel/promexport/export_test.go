package promexport

import "net"

// listenAddr, for the external tests.
var ListenAddr = listenAddr

// Addr returns the address s listens on, for the external tests.
func (s *Server) Addr() net.Addr { return s.addr }
