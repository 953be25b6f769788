// Command fleetmux is an MCP server that lets AI agents drive tmux on this
// machine and on dev boxes reached over SSH. Without arguments it serves
// MCP on stdio; subcommands inspect hosts, tools and the audit log.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0"

// subcommands maps a subcommand name to its entry point.
var subcommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"tools": runTools,
	"call":  runCall,
	"hosts": runHosts,
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `fleetmux: tmux for AI agents, on this machine and on your dev boxes over SSH.

Usage:
  fleetmux [flags]                  serve MCP on stdio (register this with your MCP client)
  fleetmux tools [--json]           list the tools this configuration exposes
  fleetmux call TOOL [JSON]         run one tool and print its result as JSON
  fleetmux hosts [--json] [--check] show ssh_config hosts and how they resolve
  fleetmux audit [flags]            query the persisted audit log
  fleetmux bench [flags]            measure tool-call latency per transport

Local mode is a drop-in replacement for libtmux-mcp 0.1.0a20: same tools,
schemas, results, errors and environment variables (LIBTMUX_SAFETY,
LIBTMUX_SOCKET, LIBTMUX_SOCKET_PATH, LIBTMUX_TMUX_BIN,
LIBTMUX_SUPPRESS_HISTORY, LIBTMUX_MCP_WAIT_MAX_SECONDS). Selecting hosts with
--hosts switches on fleet mode: every tool takes a "host" argument.

Flags:
`

// globalFlags are shared by serving and the subcommands that build a server.
type globalFlags struct {
	hosts      string
	sshConfig  string
	noLocal    bool
	hostSafety multiFlag
	state      string
	noAudit    bool
	retention  string
	logLevel   string
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func (g *globalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.hosts, "hosts", os.Getenv("FLEETMUX_HOSTS"), "comma-separated globs over ssh_config Host aliases to enable (\"!pat\" excludes); env FLEETMUX_HOSTS")
	fs.StringVar(&g.sshConfig, "ssh-config", os.Getenv("FLEETMUX_SSH_CONFIG"), "ssh_config file to read hosts from (default ~/.ssh/config); env FLEETMUX_SSH_CONFIG")
	fs.BoolVar(&g.noLocal, "no-local", false, "do not expose this machine as host \"local\" in fleet mode")
	fs.Var(&g.hostSafety, "host-safety", "cap a host's safety tier, PATTERN=readonly|mutating|destructive (repeatable)")
	fs.StringVar(&g.state, "state", os.Getenv("FLEETMUX_STATE"), "state file for the audit log and host state (default $XDG_STATE_HOME/fleetmux/state.db); env FLEETMUX_STATE")
	fs.BoolVar(&g.noAudit, "no-audit", false, "do not persist the audit log")
	fs.StringVar(&g.retention, "audit-retention", "90d", "delete audit records older than this (e.g. 30d, 72h)")
	fs.StringVar(&g.logLevel, "log-level", "warn", "stderr log level: debug, info, warn, error")
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if sc, ok := subcommands[args[0]]; ok {
			return sc(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("fleetmux", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var g globalFlags
	g.register(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintf(stdout, "fleetmux %s (libtmux-mcp %s compatible)\n", version, mcp.ServerVersion)
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fleetmux: unknown command %q (see fleetmux --help)\n", fs.Arg(0))
		return 2
	}
	return serve(&g, stderr)
}

func newLogger(level string, w io.Writer) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// build assembles the MCP server from flags and the environment.
func build(ctx context.Context, g *globalFlags, log *slog.Logger) (*mcp.Server, func(), error) {
	settings, err := mcp.SettingsFromEnv(nil)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range settings.Warnings {
		log.Warn(w)
	}
	opts := mcp.Options{Settings: settings, Logger: log}
	cleanup := func() {}
	if err := wire(ctx, g, &opts, log, &cleanup); err != nil {
		return nil, nil, err
	}
	srv, err := mcp.New(opts)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return srv, cleanup, nil
}

func wire(ctx context.Context, g *globalFlags, o *mcp.Options, log *slog.Logger, cleanup *func()) error {
	// The store first: fleet mode persists host state in it.
	hooks := append([]func(context.Context, *globalFlags, *mcp.Options, *slog.Logger, *func()) error{wireStore}, wireFleet)
	for _, h := range hooks {
		if err := h(ctx, g, o, log, cleanup); err != nil {
			return err
		}
	}
	return nil
}

func serve(g *globalFlags, stderr io.Writer) int {
	log := newLogger(g.logLevel, stderr)
	if _, err := exec.LookPath("tmux"); err != nil {
		fmt.Fprintln(stderr, "fleetmux: tmux binary not found on PATH")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, cleanup, err := build(ctx, g, log)
	if err != nil {
		fmt.Fprintf(stderr, "fleetmux: %v\n", err)
		return 1
	}
	defer cleanup()
	if err := srv.Run(ctx, &sdk.StdioTransport{}); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		log.Debug("server stopped", "error", err)
	}
	return 0
}

// inProcess builds a server and connects an in-memory client to it.
func inProcess(args []string, name string, stderr io.Writer, extra func(fs *flag.FlagSet)) (*sdk.ClientSession, func(), *flag.FlagSet, int) {
	fs := flag.NewFlagSet("fleetmux "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var g globalFlags
	g.register(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, nil, 0
		}
		return nil, nil, nil, 2
	}
	ctx := context.Background()
	log := newLogger(g.logLevel, stderr)
	srv, cleanup, err := build(ctx, &g, log)
	if err != nil {
		fmt.Fprintf(stderr, "fleetmux: %v\n", err)
		return nil, nil, nil, 1
	}
	cs, closeFn, err := srv.InProcess(ctx, "fleetmux-cli")
	if err != nil {
		cleanup()
		fmt.Fprintf(stderr, "fleetmux: %v\n", err)
		return nil, nil, nil, 1
	}
	return cs, func() { closeFn(); cleanup() }, fs, -1
}

func runTools(args []string, stdout, stderr io.Writer) int {
	var asJSON bool
	cs, done, _, rc := inProcess(args, "tools", stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print the full tools/list result as JSON")
	})
	if rc >= 0 {
		return rc
	}
	defer done()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		fmt.Fprintf(stderr, "fleetmux tools: %v\n", err)
		return 1
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res.Tools); err != nil {
			fmt.Fprintf(stderr, "fleetmux tools: %v\n", err)
			return 1
		}
		return 0
	}
	for _, t := range res.Tools {
		tier := "mutating"
		if t.Annotations != nil && t.Annotations.ReadOnlyHint {
			tier = "readonly"
		} else if t.Annotations != nil && t.Annotations.DestructiveHint != nil && *t.Annotations.DestructiveHint {
			tier = "destructive*"
		}
		fmt.Fprintf(stdout, "%-30s %-13s %s\n", t.Name, tier, t.Title)
	}
	return 0
}

func runCall(args []string, stdout, stderr io.Writer) int {
	var host string
	// Flags may follow the positional arguments: move them first.
	var pos, flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && len(pos) >= 1 && a != "-" {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && flagTakesValue(a) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	cs, done, fs, rc := inProcess(append(flags, pos...), "call", stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&host, "host", "", "host to run on (fleet mode)")
	})
	if rc >= 0 {
		if rc == 0 {
			fmt.Fprintln(stderr, "usage: fleetmux call TOOL ['{\"arg\": \"value\"}'] [--host H]")
		}
		return rc
	}
	defer done()
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintln(stderr, "usage: fleetmux call TOOL ['{\"arg\": \"value\"}'] [--host H]")
		return 2
	}
	arguments := map[string]any{}
	if fs.NArg() == 2 && strings.TrimSpace(fs.Arg(1)) != "" {
		if err := json.Unmarshal([]byte(fs.Arg(1)), &arguments); err != nil {
			fmt.Fprintf(stderr, "fleetmux call: arguments must be a JSON object: %v\n", err)
			return 2
		}
	}
	if host != "" {
		arguments["host"] = host
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: fs.Arg(0), Arguments: arguments})
	if err != nil {
		fmt.Fprintf(stderr, "fleetmux call: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(res)
	if res.IsError {
		return 1
	}
	return 0
}

func flagTakesValue(a string) bool {
	name := strings.TrimLeft(a, "-")
	switch name {
	case "no-local", "no-audit", "json", "version":
		return false
	}
	return true
}
