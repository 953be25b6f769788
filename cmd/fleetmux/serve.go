package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/tmux"
	"github.com/fleetmux/fleetmux/transport"
)

const serveUsage = `Usage: fleetmux serve [--http ADDR [--token-file FILE] [--no-auth] [--allow-remote]] [flags]

Serves MCP. Without --http it speaks MCP on stdin/stdout, exactly as plain
"fleetmux" does (what an MCP client starts itself).

With --http ADDR it runs as a daemon that serves MCP over streamable HTTP at
http://ADDR/mcp to any number of agents at once. All of them share one
server: the same tools, the same pooled SSH connections to your hosts,
the same audit log, so a second agent sees the fleet the first one set up,
and the daemon outlives client restarts. It speaks every MCP revision the
clients ask for: 2026-07-28 (no sessions: each request is self-contained)
and 2024-11-05 to 2025-11-25 (sessions). A session's id (Mcp-Session-Id) is
recorded with its calls ("fleetmux audit --session ID").

Every request needs "Authorization: Bearer TOKEN", the token in --token-file
(created with 32 random bytes, mode 0600, when missing; a file that group or
others can read is refused). Requests whose Host header is not this server's
loopback address and port, or whose Origin is another site, are refused (403):
a web page cannot reach the daemon through DNS rebinding.

Register it in Claude Code (user scope: every project):
  claude mcp add --scope user --transport http fleetmux http://127.0.0.1:8765/mcp \
    --header "Authorization: Bearer $(cat ~/.local/state/fleetmux/http-token)"
Other clients take the same URL and header in their HTTP server entry.

The process serving HTTP runs tools with its own environment: LIBTMUX_SOCKET,
LIBTMUX_SAFETY and the like are read where "fleetmux serve" starts, not from
the clients, and the self-pane guards protect the daemon's own pane (TMUX_PANE).

  --http ADDR
      serve streamable HTTP on ADDR (HOST:PORT, e.g. 127.0.0.1:8765; port 0
      picks a free port). HOST must be a loopback address (127.0.0.1, ::1,
      localhost) unless --allow-remote is given
  --token-file FILE
      bearer token file (default: http-token next to the state file, e.g.
      $XDG_STATE_HOME/fleetmux/http-token, else
      ~/.local/state/fleetmux/http-token)
  --no-auth
      serve without a token; only on a loopback address, and any local user
      or process can then drive your tmux (logged at start-up)
  --allow-remote
      allow a non-loopback ADDR (other machines can connect; the token is
      then always required). Put TLS in front (e.g. a reverse proxy): the
      daemon itself speaks plain HTTP
  --max-sessions N
      MCP sessions open at once (default 64; the token's clients share
      them; requests of revision 2026-07-28 open none). A new session closes the least recently used idle one; when
      all are busy it is refused (503)
  --session-idle DURATION
      close an MCP session that sent nothing for this long (default 30m)

A POST carries at most 32 batched JSON-RPC messages and 4 MiB.

Flags shared with serving on stdio:
`

const serveFooter = `
Exit status: 0 when stopped by SIGINT/SIGTERM (HTTP; tool calls under way get
10 s to finish) or when the client closed stdin (stdio); 1 when the server
could not start; 2 on bad usage.
`

// httpShutdownGrace bounds how long a stopping daemon waits for the tool
// calls under way.
const httpShutdownGrace = 10 * time.Second

// httpSessionIdle closes an HTTP client's MCP session after this long
// without a request (a client that vanished without ending it), unless
// --session-idle says otherwise.
const httpSessionIdle = 30 * time.Minute

// httpFlags are the flags of `fleetmux serve` beyond the global ones.
type httpFlags struct {
	addr        string
	tokenFile   string
	noAuth      bool
	allowRemote bool
	maxSessions int
	sessionIdle time.Duration
}

// runServe is `fleetmux serve`.
func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleetmux serve", flag.ContinueOnError)
	var g globalFlags
	g.register(fs)
	var o httpFlags
	fs.StringVar(&o.addr, "http", "", "serve streamable HTTP on `ADDR`")
	fs.StringVar(&o.tokenFile, "token-file", "", "bearer token `FILE`")
	fs.BoolVar(&o.noAuth, "no-auth", false, "no token (loopback only)")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow a non-loopback ADDR")
	fs.IntVar(&o.maxSessions, "max-sessions", mcp.DefaultMaxSessions, "MCP sessions open at once")
	fs.DurationVar(&o.sessionIdle, "session-idle", httpSessionIdle, "close an MCP session idle this long")
	if err := parseFlags(fs, args, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, serveUsage)
			printFlagsExcept(stdout, fs, "http", "token-file", "no-auth", "allow-remote", "max-sessions", "session-idle")
			fmt.Fprint(stdout, serveFooter)
			return 0
		}
		return 2
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fleetmux serve: %s (see fleetmux serve --help)\n", fmt.Sprintf(format, a...))
		return 2
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if o.addr == "" {
		set := ""
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "token-file", "no-auth", "allow-remote", "max-sessions", "session-idle":
				set = f.Name
			}
		})
		if set != "" {
			return usageErr("--%s needs --http ADDR", set)
		}
		return serve(&g, stderr)
	}
	host, port, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usageErr("--http %s: want HOST:PORT, e.g. 127.0.0.1:8765", o.addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return usageErr("--http %s: bad port %q", o.addr, port)
	}
	loopback := mcp.IsLoopbackHost(host)
	switch {
	case !loopback && !o.allowRemote:
		return usageErr("--http %s is not a loopback address: other machines could drive your tmux; serve on 127.0.0.1, or add --allow-remote if that is what you want", o.addr)
	case o.noAuth && !loopback:
		return usageErr("--no-auth works only on a loopback address (127.0.0.1, ::1, localhost); a non-loopback address always needs the token")
	case o.noAuth && o.tokenFile != "":
		return usageErr("--no-auth and --token-file exclude each other")
	case o.maxSessions < 1:
		return usageErr("--max-sessions %d: want at least 1", o.maxSessions)
	case o.sessionIdle <= 0:
		return usageErr("--session-idle %s: want a positive duration, e.g. 30m", o.sessionIdle)
	}
	return serveHTTP(&g, &o, stderr)
}

// tmuxVersionTimeout bounds the start-up `tmux -V`.
const tmuxVersionTimeout = 5 * time.Second

// tmuxUsable reports on stderr and returns false when the tmux binary the
// tools will run (LIBTMUX_TMUX_BIN, a path or a name on PATH, else "tmux")
// is missing or older than tmux.MinVersion. A `tmux -V` that fails or prints a
// version it cannot compare (a wrapper, a development build) is logged
// and let through: the tools report what goes wrong then.
func tmuxUsable(log *slog.Logger, stderr io.Writer) bool {
	bin := os.Getenv("LIBTMUX_TMUX_BIN")
	if bin == "" {
		bin = "tmux"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		if bin == "tmux" {
			fmt.Fprintln(stderr, "fleetmux: tmux binary not found on PATH")
		} else {
			fmt.Fprintf(stderr, "fleetmux: LIBTMUX_TMUX_BIN=%s: not an executable file\n", bin)
		}
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), tmuxVersionTimeout)
	defer cancel()
	v, err := tmux.ProbeVersion(ctx, transport.NewLocal(), path)
	if err != nil {
		log.Warn("start-up: tmux -V failed; not checking the tmux version", "tmux", path, "err", err)
		return true
	}
	if !tmux.VersionAtLeast(v, tmux.MinVersion) {
		from := "on PATH"
		if os.Getenv("LIBTMUX_TMUX_BIN") != "" {
			from = "LIBTMUX_TMUX_BIN"
		}
		fmt.Fprintf(stderr, "fleetmux: tmux %s (%s, %s) is older than tmux %s, the oldest fleetmux supports; install tmux %s or newer, or point LIBTMUX_TMUX_BIN at one\n",
			v, path, from, tmux.MinVersion, tmux.MinVersion)
		return false
	}
	log.Debug("start-up: tmux found", "tmux", path, "version", v, "minimum", tmux.MinVersion)
	// Which path local tool calls take: tmux.NewExecutor's own answer for
	// this binary (its probe is cached, so the first call reuses it).
	if log.Enabled(ctx, slog.LevelDebug) {
		_, how := tmux.NativeStatus(ctx, path, nil)
		log.Debug("start-up: local tmux calls", "path", how, "tmux", path)
	}
	return true
}

// serveHTTP runs the HTTP daemon until SIGINT/SIGTERM.
func serveHTTP(g *globalFlags, o *httpFlags, stderr io.Writer) int {
	log := newLogger(g.logLevel, stderr)
	if !tmuxUsable(log, stderr) {
		return 1
	}
	var token, tokenPath string
	var created bool
	if !o.noAuth {
		tokenPath = o.tokenFile
		if tokenPath == "" {
			var err error
			if tokenPath, err = defaultTokenPath(g); err != nil {
				fmt.Fprintf(stderr, "fleetmux serve: %v (use --token-file)\n", err)
				return 1
			}
		}
		var err error
		if token, created, err = loadOrCreateToken(tokenPath); err != nil {
			fmt.Fprintf(stderr, "fleetmux serve: %v\n", err)
			return 1
		}
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		fmt.Fprintf(stderr, "fleetmux serve: listen: %v\n", err)
		return 1
	}
	bound := ln.Addr().(*net.TCPAddr)
	var hosts []string
	if !o.allowRemote {
		if !bound.IP.IsLoopback() {
			ln.Close()
			fmt.Fprintf(stderr, "fleetmux serve: --http %s resolved to %s, which is not a loopback address (add --allow-remote to serve there)\n", o.addr, bound)
			return 2
		}
		p := strconv.Itoa(bound.Port)
		hosts = []string{net.JoinHostPort(bound.IP.String(), p), net.JoinHostPort("localhost", p)}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g.warm = true
	srv, cleanup, err := build(ctx, g, log)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "fleetmux serve: %v\n", err)
		return 1
	}
	defer cleanup()
	h := srv.HTTPHandler(mcp.HTTPOptions{Token: token, Hosts: hosts, SessionIdle: o.sessionIdle, MaxSessions: o.maxSessions})
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	url := "http://" + bound.String() + "/mcp"
	// The address line comes last: whoever waits for it (a person, or a
	// script or test reading stderr up to it) has read the token's place
	// and the warnings too.
	switch {
	case o.noAuth:
		log.Warn("authentication is OFF (--no-auth): every local user and process can drive tmux through " + url)
	case created:
		fmt.Fprintf(stderr, "fleetmux: created a bearer token in %s; clients send \"Authorization: Bearer $(cat %s)\"\n", tokenPath, tokenPath)
	default:
		fmt.Fprintf(stderr, "fleetmux: bearer token in %s; clients send \"Authorization: Bearer $(cat %s)\"\n", tokenPath, tokenPath)
	}
	if o.allowRemote && !bound.IP.IsLoopback() {
		log.Warn("serving on a non-loopback address (--allow-remote): anyone who can reach it and has the token can drive tmux; the connection is plain HTTP", "address", bound.String())
	}
	fmt.Fprintf(stderr, "fleetmux: serving MCP over streamable HTTP at %s (Ctrl-C stops it)\n", url)

	select {
	case err := <-served:
		fmt.Fprintf(stderr, "fleetmux serve: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	log.Info("stopping: waiting for the tool calls under way", "grace", httpShutdownGrace)
	h.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), httpShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("tool calls still running at the end of the grace period were cut off", "error", err)
		_ = hs.Close()
	}
	<-served
	return 0
}
