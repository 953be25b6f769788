package tools

import "github.com/fleetmux/fleetmux/tmux"

// TmuxServer is the one rule for which tmux server a call reaches through
// ex: the socket name given (socketName; nil means LIBTMUX_SOCKET's), and
// on this machine (local) LIBTMUX_SOCKET_PATH (passed as -S, which tmux
// prefers over -L) and LIBTMUX_TMUX_BIN. Tools (Call.Tmux, Call.TmuxFor)
// and fleetmux doctor's look at the server the tools reach use it.
func TmuxServer(ex tmux.Executor, socketName *string, local bool, getenv func(string) string) *tmux.Server {
	srv := &tmux.Server{Executor: ex}
	if socketName != nil {
		srv.SocketName = *socketName
	} else {
		srv.SocketName = getenv("LIBTMUX_SOCKET")
	}
	if local {
		srv.SocketPath = getenv("LIBTMUX_SOCKET_PATH")
		srv.Bin = getenv("LIBTMUX_TMUX_BIN")
	}
	return srv
}
