package tools

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

type listSessionsArgs struct {
	Filters any
}

func listSessions(ctx context.Context, c *Call, a listSessionsArgs) (any, error) {
	srv := c.srv
	rows, err := srv.SessionsWith(ctx, filterExtraFields("session", a.Filters, tmux.SessionFields))
	if err != nil {
		return nil, err
	}
	if rows, err = filterRows("session", rows, a.Filters); err != nil {
		return nil, err
	}
	return infos(rows, c.SessionInfo), nil
}

// serverInfo probes one server: liveness and session count from
// list-sessions, version from display-message.
func serverInfo(c *Call, ctx context.Context, srv *tmux.Server, name, path *string) (ServerInfo, error) {
	info := ServerInfo{SocketName: name, SocketPath: path, Host: c.HostField()}
	// One request: the sessions, and the version when a server answered
	// (tmux runs nothing after a listing that failed).
	replies, err := srv.Batch(ctx, tmux.ListIDs("session", ""), tmux.DisplayMessage("", "#{version}"))
	if err != nil {
		return info, err
	}
	if err := srv.Unreachable(replies[0]); err != nil {
		return info, err
	}
	info.IsAlive = replies[0].ExitCode == 0
	if info.IsAlive {
		info.SessionCount = len(replies[0].Lines)
		if lines := replies[1].Lines; len(lines) > 0 && lines[0] != "" {
			v := lines[0]
			info.Version = &v
		}
	}
	return info, nil
}

// configuredSocket is the socket name and path the call's server is
// reported under: socketName (the socket_name argument) or else
// LIBTMUX_SOCKET, and LIBTMUX_SOCKET_PATH locally.
func configuredSocket(c *Call, socketName *string) (*string, *string) {
	var name, path *string
	if v := socketName; v != nil {
		name = v
	} else if v := c.Getenv("LIBTMUX_SOCKET"); v != "" {
		name = &v
	}
	if c.IsLocal() {
		if v := c.Getenv("LIBTMUX_SOCKET_PATH"); v != "" {
			path = &v
		}
	}
	return name, path
}

type getServerInfoArgs struct {
	SocketName *string
}

func getServerInfo(ctx context.Context, c *Call, a getServerInfoArgs) (any, error) {
	srv := c.srv
	name, path := configuredSocket(c, a.SocketName)
	return serverInfo(c, ctx, srv, name, path)
}

// listServerProbe bounds list_servers' look at one socket: a live tmux
// server answers in milliseconds.
const listServerProbe = 2 * time.Second

type listServersArgs struct {
	ExtraSocketPaths []string
}

func listServers(ctx context.Context, c *Call, a listServersArgs) (any, error) {
	r, err := c.env.Backend.Runner(ctx, c.Host)
	if err != nil {
		return nil, &HostError{Host: c.Host, Err: err}
	}
	extra := a.ExtraSocketPaths
	tmpdir := ""
	if c.IsLocal() {
		tmpdir = c.Getenv("TMUX_TMPDIR")
	}
	socks, err := tmux.FindSockets(ctx, r, tmpdir, extra)
	if err != nil {
		return nil, err
	}
	names, paths := socks.Names, socks.Paths
	out := []ServerInfo{}
	// Each local socket is probed under its own short bound: a socket
	// where nothing answers costs listServerProbe, not a call deadline.
	// (A remote host's calls are bounded by its connection's watchdog.)
	probe := func(srv *tmux.Server, name, path *string) (ServerInfo, error) {
		pctx := ctx
		if c.IsLocal() {
			var cancel context.CancelFunc
			pctx, cancel = context.WithTimeout(ctx, listServerProbe)
			defer cancel()
		}
		return serverInfo(c, pctx, srv, name, path)
	}
	for _, n := range names {
		srv, err := c.TmuxFor(ctx, n)
		if err != nil {
			return nil, err
		}
		name := n
		_, path := configuredSocket(c, nil) // the path alone
		info, err := probe(srv, &name, path)
		if err != nil || !info.IsAlive {
			continue
		}
		out = append(out, info)
	}
	for _, p := range extra {
		if !paths[p] {
			continue
		}
		srv, err := c.TmuxFor(ctx, "")
		if err != nil {
			return nil, err
		}
		srv.SocketPath = p
		var name *string
		if v := c.Getenv("LIBTMUX_SOCKET"); v != "" {
			name = &v
		}
		path := p
		info, err := probe(srv, name, &path)
		if err != nil || !info.IsAlive {
			continue
		}
		out = append(out, info)
	}
	return out, nil
}

func checkCreateSession(a createSessionArgs) error {
	if _, err := a.env(); err != nil {
		return err
	}
	if name := a.SessionName; name != nil {
		return checkSessionName(*name)
	}
	return nil
}

type createSessionArgs struct {
	spawnArgs
	SessionName, StartDirectory, WindowName *string
	X, Y                                    *int
}

func createSession(ctx context.Context, c *Call, a createSessionArgs) (any, error) {
	env, _ := a.env() // checked by checkCreateSession
	srv := c.srv
	ns := tmux.NewSession{Name: a.SessionName, Width: a.X, Height: a.Y, Spawn: tmux.Spawn{Env: env}}
	// A plain name needs no listing first: tmux refuses the same taken
	// name itself (tmux.TakenName), in the one request that creates.
	if name := ns.Name; name != nil && !tmux.PlainName(*name) {
		rows, err := srv.Sessions(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r["session_name"] == *name {
				return nil, &tmux.SessionExistsError{Name: *name}
			}
		}
	}
	if d := a.StartDirectory; d != nil && *d != "" {
		ns.Spawn.Dir = expandHome(c, *d)
	}
	if w := a.WindowName; w != nil && *w != "" {
		ns.WindowName = w
	}
	row, err := tmux.Created(ctx, srv, ns.Cmd(), tmux.SessionFields, "session")
	if name := ns.Name; name != nil && tmux.TakenName(err, *name) {
		return nil, &tmux.SessionExistsError{Name: *name}
	}
	if err != nil {
		return nil, replyError(err)
	}
	return c.SessionInfo(row), nil
}

func killServer(ctx context.Context, c *Call, _ noArgs) (any, error) {
	srv := c.srv
	if callerOnServer(c, ctx, srv) {
		return nil, Refusedf("Refusing to kill the tmux server while this MCP server is running inside it. Use a manual tmux command if intended.")
	}
	out, err := srv.Exec(ctx, tmux.KillServer())
	if err != nil {
		return nil, err
	}
	// libtmux's Server.kill: "no server running" or a missing socket is
	// success; any other stderr raises LibTmuxException(stderr lines), whose
	// text is the Python list. (A client that lost the server while it
	// shut down is success too.)
	lines := out.ErrLines()
	joined := strings.Join(lines, " ")
	daemonDown := strings.Contains(joined, "no server running") ||
		(strings.Contains(joined, "error connecting to") && strings.Contains(joined, "No such file or directory"))
	if len(lines) > 0 && !daemonDown && !strings.Contains(joined, "server exited unexpectedly") {
		quoted := make([]string, len(lines))
		for i, l := range lines {
			quoted[i] = pyfmt.Repr(l)
		}
		return nil, &ToolError{Msg: "tmux error: [" + strings.Join(quoted, ", ") + "]", Expected: true, Class: "LibTmuxException",
			Cause: &tmux.CommandError{Sub: "kill-server", Stderr: lines}}
	}
	return "Server killed successfully", nil
}

// checkSessionName applies libtmux's session-name rules. An empty name
// still prints its (empty) name: libtmux only omits the suffix for None.
func checkSessionName(name string) error {
	err := tmux.CheckSessionName(name)
	var bn *tmux.BadSessionNameError
	if name == "" && errors.As(err, &bn) {
		return &ToolError{Msg: "Bad session name: empty (session name: )", Expected: true, Class: bn.Class(), Cause: err}
	}
	return err
}

// replyError reports tmux output that is not what the command promised
// as the unexpected RuntimeError the reference raises; other errors pass.
func replyError(err error) error {
	var re *tmux.ReplyError
	if errors.As(err, &re) {
		return Unexpected("RuntimeError", re.Err)
	}
	return err
}
