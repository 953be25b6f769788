// Command fleetmux is an MCP server that lets AI agents drive tmux on this
// machine and on dev boxes reached over SSH. Without arguments it serves
// MCP on stdio; subcommands inspect hosts, tools and the audit log.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fleetmux/fleetmux/cmd/internal/audit"
	"github.com/fleetmux/fleetmux/cmd/internal/bench"
	"github.com/fleetmux/fleetmux/cmd/internal/doctor"
	"github.com/fleetmux/fleetmux/cmd/internal/hosts"
	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/mcp/age"
	"github.com/fleetmux/fleetmux/mcp/stdio"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0"

// subcommands maps a subcommand name to its entry point.
var subcommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"tools":   runTools,
	"call":    runCall,
	"hosts":   hosts.Run,
	"audit":   audit.Run,
	"bench":   bench.Run,
	"serve":   runServe,
	"version": runVersion,
}

// doctor reads the subcommand table (an entry of a client config may name
// a subcommand), so it joins the table at init.
func init() { subcommands["doctor"] = runDoctor }

// runDoctor is `fleetmux doctor`, which checks client entries' arguments
// with the serving flag set (serveArgs).
func runDoctor(args []string, stdout, stderr io.Writer) int {
	return doctor.Run(args, stdout, stderr, doctor.Options{
		Version:    version,
		Subcommand: func(name string) bool { return subcommands[name] != nil },
		ServeArgs:  serveArgs,
		TokenPath:  func(state string) (string, error) { return defaultTokenPath(&globalFlags{state: state}) },
	})
}

// envFlags maps the FLEETMUX_ variables that give flag defaults to their
// flags (see globalFlags.register).
var envFlags = map[string]string{"FLEETMUX_HOSTS": "hosts", "FLEETMUX_SSH_CONFIG": "ssh-config", "FLEETMUX_STATE": "state", "FLEETMUX_TOOLSETS": "toolsets"}

// serveArgs parses an MCP client entry's args as serving would, the
// entry's env (not this process's) giving the flags' defaults: whether
// they select hosts, the first argument left after the flags, the error.
func serveArgs(args []string, env map[string]string) (fleetMode bool, extra string, err error) {
	fs := flag.NewFlagSet("fleetmux", flag.ContinueOnError)
	var g globalFlags
	g.register(fs)
	fs.Bool("version", false, "")
	for k, name := range envFlags {
		_ = fs.Set(name, env[k])
	}
	if err := parseFlags(fs, args, io.Discard); err != nil {
		return g.hosts != "", "", err
	}
	return g.hosts != "", fs.Arg(0), nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `fleetmux: tmux for AI agents, on this machine and on your dev boxes over SSH.

Usage:
  fleetmux [flags]                  serve MCP on stdio (register this with your MCP client)
  fleetmux serve --http ADDR [flags]
                                    serve MCP over HTTP to several agents at once, with a
                                    bearer token (see fleetmux help serve)
  fleetmux tools [--json]           list the tools this configuration exposes
  fleetmux call TOOL [JSON] [--host H]
                                    run one tool and print its MCP result as JSON
  fleetmux hosts [--json] [--check] show ssh_config hosts and how they resolve
  fleetmux audit [flags]            query the persisted audit log
  fleetmux bench [flags]            measure tool-call latency per transport
  fleetmux doctor [--hosts P] [--json]
                                    check tmux, the state file, ssh, hosts and
                                    the MCP client configs, with a fix for each
                                    problem
  fleetmux version                  print the version (also --version)
  fleetmux help [COMMAND]           this help, or the help of COMMAND

Serving speaks MCP on stdin/stdout; logs go to stderr. It is meant to be
started by an MCP client, e.g.:
  claude mcp add --scope user fleetmux -- /absolute/path/to/fleetmux

Local mode is a drop-in replacement for libtmux-mcp 0.1.0a20: same tools,
schemas, results, errors and environment variables (LIBTMUX_SAFETY,
LIBTMUX_SOCKET, LIBTMUX_SOCKET_PATH, LIBTMUX_TMUX_BIN,
LIBTMUX_SUPPRESS_HISTORY, LIBTMUX_MCP_WAIT_MAX_SECONDS). Selecting hosts with
--hosts switches on fleet mode: every tool takes a "host" argument.

Fleet mode, or --extensions in local mode, adds durable jobs: run_command
with detach=true returns at once with a job id, and a run_command whose
timeout exceeds --max-call-seconds answers "pending" with one; get_job,
list_jobs and cancel_job follow the job. Its exit status is kept by the host
(a tmux server option), so it is read back after fleetmux restarts or its
SSH connection drops. Long calls send progress notifications to clients
that ask for them.

Every tool call is recorded in the audit log of the state file (see
"fleetmux audit --help"); sensitive arguments are stored only as length and
SHA-256 prefix.

Flags (also accepted by tools and call):
`

const usageFooter = `
Exit status: 0 when the client closed stdin (or on SIGINT/SIGTERM), 1 when
the server could not start, 2 on bad usage.
`

// globalFlags are shared by serving and the subcommands that build a server.
type globalFlags struct {
	hosts      string
	sshConfig  string
	noLocal    bool
	hostSafety multiFlag
	state      string
	noAudit    bool
	retention  agoFlag
	logLevel   string
	toolsets   string
	readOnly   bool
	warm       bool // dial the selected hosts at start-up (serving only)
	fanout     posInt
	extensions bool
	maxCall    secondsFlag
	// quietToolErrors drops the server's log record of a tool call that
	// failed: `fleetmux call` prints the result and one line about it.
	quietToolErrors bool
	// envWarnings are bad values of environment variables that give a
	// flag its default (logged at start-up; the built-in default is used).
	envWarnings []string
}

// posInt is an integer flag that must be at least 1.
type posInt int

func (p *posInt) String() string { return strconv.Itoa(int(*p)) }

func (p *posInt) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return errors.New("want a whole number of at least 1")
	}
	*p = posInt(n)
	return nil
}

// secondsFlag is a number of seconds, 0 or more.
type secondsFlag struct{ v float64 }

func (f *secondsFlag) String() string { return strconv.FormatFloat(f.v, 'f', -1, 64) }

func (f *secondsFlag) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return errors.New("want a number of seconds, 0 or more (0: never)")
	}
	f.v = v
	return nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// agoFlag is an age such as 90d or 72h (see package age), checked while the
// flags are parsed so that a bad value is a usage error.
type agoFlag struct {
	text string
	d    time.Duration
}

func (a *agoFlag) String() string { return a.text }

func (a *agoFlag) Set(v string) error {
	d, ok, err := age.Parse(v)
	if err != nil || !ok || v == "" {
		return errors.New("want an age such as 90d, 36h or 1d12h (0 keeps records of any age)")
	}
	a.text, a.d = v, d
	return nil
}

// defaultRetention is the default of --audit-retention.
const defaultRetention = "90d"

func (g *globalFlags) register(fs *flag.FlagSet) {
	g.retention = agoFlag{text: defaultRetention, d: 90 * 24 * time.Hour}
	fs.StringVar(&g.hosts, "hosts", os.Getenv("FLEETMUX_HOSTS"), "enable the ssh_config Host aliases matching `PATTERNS` (comma-separated globs, \"!pat\" excludes); switches on fleet mode (env FLEETMUX_HOSTS)")
	fs.StringVar(&g.sshConfig, "ssh-config", os.Getenv("FLEETMUX_SSH_CONFIG"), "ssh_config `FILE` to read hosts from (default ~/.ssh/config, then /etc/ssh/ssh_config; env FLEETMUX_SSH_CONFIG)")
	fs.BoolVar(&g.noLocal, "no-local", false, "do not expose this machine as host \"local\" (fleet mode only)")
	fs.Var(&g.hostSafety, "host-safety", "cap a host's safety tier, `PATTERN=TIER` with TIER readonly, mutating or destructive (repeatable; fleet mode only). When several rules match a host, the lowest tier wins, whatever their order")
	fs.StringVar(&g.state, "state", os.Getenv("FLEETMUX_STATE"), "state `FILE` for the audit log, host state and jobs (env FLEETMUX_STATE; default $XDG_STATE_HOME/fleetmux/state.db, else ~/.local/state/fleetmux/state.db)")
	fs.BoolVar(&g.noAudit, "no-audit", false, "do not open the state file: no persisted audit log or host state")
	fs.Var(&g.retention, "audit-retention", "delete audit records older than this `AGE`, e.g. 30d or 72h; 0 keeps any age (the log is also capped at 256 MiB)")
	fs.StringVar(&g.logLevel, "log-level", "warn", "stderr log `LEVEL`: debug, info, warn or error")
	g.fanout = mcp.DefaultFanoutConcurrency
	fs.Var(&g.fanout, "fanout-concurrency", "at most `N` hosts at once for a call on several hosts (fleet mode; a call's \"serial\" runs fewer)")
	fs.StringVar(&g.toolsets, "toolsets", os.Getenv("FLEETMUX_TOOLSETS"), "show only the tools of these toolsets, a comma-separated `LIST` of "+strings.ReplaceAll(mcp.ToolsetNames(), ",", ", ")+" (default all; env FLEETMUX_TOOLSETS); \"fleetmux tools\" counts the tools of each. Hidden tools behave like tools above the safety tier")
	fs.BoolVar(&g.readOnly, "read-only", false, "show only the read-only tools: the same as LIBTMUX_SAFETY=readonly, whatever LIBTMUX_SAFETY says")
	fs.BoolVar(&g.extensions, "extensions", os.Getenv("FLEETMUX_EXTENSIONS") == "1", "serve fleetmux's additions in local mode too (fleet mode always has them): jobs (run_command detach, get_job, list_jobs, cancel_job), run_command's pending answer at --max-call-seconds and progress notifications on long calls. Without it (and without --hosts) the tools are exactly libtmux-mcp's (env FLEETMUX_EXTENSIONS=1)")
	g.maxCall = secondsFlag{v: mcp.DefaultMaxCallSeconds}
	if v := os.Getenv("FLEETMUX_MAX_CALL_SECONDS"); v != "" {
		if err := g.maxCall.Set(v); err != nil {
			g.envWarnings = append(g.envWarnings, fmt.Sprintf("FLEETMUX_MAX_CALL_SECONDS=%q: %v; using %g", v, err, mcp.DefaultMaxCallSeconds))
		}
	}
	fs.Var(&g.maxCall, "max-call-seconds", "with the extensions, a run_command whose timeout exceeds this many `SECONDS` answers \"pending\" with a job id at that point instead of waiting on (the command runs on; read it with get_job); 0 never does (default 50, below the 60 s request deadline of many MCP clients; env FLEETMUX_MAX_CALL_SECONDS)")
}

// printFlags writes the flags of fs as "--name ARG" lines with their
// usage, like flag.PrintDefaults but in the double-dash form this
// documentation uses.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		switch arg {
		case "value", "string":
			arg = "VALUE"
		case "int":
			arg = "N"
		}
		head := "  --" + f.Name
		if arg != "" {
			head += " " + arg
		}
		// Defaults taken from the environment are described by the usage.
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" &&
			!strings.Contains(text, "(default") && !strings.Contains(text, "env FLEETMUX_") {
			text += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "%s\n%s", head, wrapText(text, "      ", 78))
	})
}

// wrapText fills text into lines of at most width columns (longer words
// stand alone), each starting with indent and ending in a newline.
func wrapText(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if line != indent && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}

// parseFlags parses args with fs quietly: --help returns flag.ErrHelp, and a
// bad flag is reported in one line on stderr (the caller exits 2).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if err == nil {
		if f := fs.Lookup("log-level"); f != nil {
			var l slog.Level
			if lerr := l.UnmarshalText([]byte(f.Value.String())); lerr != nil {
				err = fmt.Errorf("invalid value %q for flag --log-level: want debug, info, warn or error", f.Value.String())
			}
		}
	}
	if err == nil {
		// --toolsets, or FLEETMUX_TOOLSETS as its default.
		if f := fs.Lookup("toolsets"); f != nil {
			if _, terr := mcp.ParseToolsets(f.Value.String()); terr != nil {
				err = fmt.Errorf("--toolsets (or FLEETMUX_TOOLSETS): %w", terr)
			}
		}
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stderr, "%s: %v (see %s --help)\n", fs.Name(), err, fs.Name())
	}
	return err
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if sc, ok := subcommands[args[0]]; ok {
			return sc(args[1:], stdout, stderr)
		}
		if args[0] == "help" {
			return runHelp(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("fleetmux", flag.ContinueOnError)
	var g globalFlags
	g.register(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := parseFlags(fs, args, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			printFlags(stdout, fs)
			fmt.Fprint(stdout, usageFooter)
			return 0
		}
		return 2
	}
	if *showVersion {
		printVersion(stdout)
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fleetmux: unknown command %q (see fleetmux --help)\n", fs.Arg(0))
		return 2
	}
	return serve(&g, stderr)
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "fleetmux %s (libtmux-mcp %s compatible)\n", version, mcp.ServerVersion)
}

// runVersion is `fleetmux version`, the same as `fleetmux --version`.
func runVersion(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 1 && (args[0] == "--help" || args[0] == "-help" || args[0] == "-h"):
		fmt.Fprintln(stdout, "Usage: fleetmux version\n\nPrints the version of fleetmux and of the libtmux-mcp it replaces, like\nfleetmux --version.")
		return 0
	case len(args) > 0:
		fmt.Fprintf(stderr, "fleetmux version: unexpected argument %q (see fleetmux version --help)\n", args[0])
		return 2
	}
	printVersion(stdout)
	return 0
}

// runHelp is `fleetmux help [COMMAND]`.
func runHelp(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		return run([]string{"--help"}, stdout, stderr)
	case len(args) > 1:
		fmt.Fprintln(stderr, "fleetmux help: usage: fleetmux help [COMMAND]")
		return 2
	}
	if sc, ok := subcommands[args[0]]; ok {
		return sc([]string{"--help"}, stdout, stderr)
	}
	fmt.Fprintf(stderr, "fleetmux help: unknown command %q (commands: serve, tools, call, hosts, audit, bench, doctor, version)\n", args[0])
	return 2
}

func newLogger(level string, w io.Writer) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// build assembles the MCP server from flags and the environment: the
// audit store first (fleet mode persists host state in it), then the
// fleet. It returns the server and the cleanup that stops what it
// started.
func build(ctx context.Context, g *globalFlags, log *slog.Logger) (*mcp.Server, func(), error) {
	settings, err := mcp.SettingsFromEnv(nil)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range append(settings.Warnings, g.envWarnings...) {
		log.Warn(w)
	}
	if g.readOnly {
		settings.Safety = mcp.TierReadonly
	}
	sets, err := mcp.ParseToolsets(g.toolsets)
	if err != nil {
		return nil, nil, fmt.Errorf("--toolsets: %w", err)
	}
	if err := checkToolsets(sets, g, log); err != nil {
		return nil, nil, err
	}
	opts := mcp.Options{Settings: settings, Logger: log, Version: version, Toolsets: sets, FanoutConcurrency: int(g.fanout),
		Extensions: g.extensions, MaxCallSeconds: g.maxCall.v}
	st, stopStore := openStore(ctx, g, log)
	if st != nil {
		j, closeJournal := openJournal(ctx, st, log)
		opts.Auditor = &storeAuditor{st: st, j: j, pid: os.Getpid()}
		stop := stopStore
		stopStore = func() { closeJournal(); stop() }
		opts.Jobs = storeJobs{st: st}
	}
	backend, closeFleet, err := openFleet(g, st, log)
	if err != nil {
		stopStore()
		return nil, nil, err
	}
	if backend != nil {
		opts.Backend = backend
	}
	cleanup := func() {
		closeFleet()
		stopStore()
	}
	srv, err := mcp.New(opts)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return srv, cleanup, nil
}

// errNoTools reports a --toolsets selection that leaves no tool to serve.
var errNoTools = errors.New("no tool to serve")

// emptyToolsetReason says why the toolset named shows no tool with these
// flags, "" when it shows some. Only local mode hides whole toolsets:
// list_hosts is fleet-only and the jobs tools are extensions; every other
// toolset has a read-only tool.
func emptyToolsetReason(set string, g *globalFlags) string {
	if g.hosts != "" {
		return ""
	}
	switch {
	case set == "fleet":
		return "toolset fleet has no tools in local mode (no --hosts): list_hosts needs fleet mode"
	case set == "jobs" && !g.extensions:
		return "toolset jobs has no tools in local mode (no --hosts) without --extensions (or FLEETMUX_EXTENSIONS=1)"
	}
	return ""
}

// checkToolsets warns about the toolsets of --toolsets that show no tool,
// and refuses a selection that leaves none: a server without tools looks
// connected in the client and does nothing.
func checkToolsets(sets []string, g *globalFlags, log *slog.Logger) error {
	var why []string
	for _, set := range sets {
		if r := emptyToolsetReason(set, g); r != "" {
			why = append(why, r)
		}
	}
	if len(why) > 0 && len(why) == len(sets) {
		return fmt.Errorf("--toolsets %s: %w: %s", strings.Join(sets, ","), errNoTools, strings.Join(why, "; "))
	}
	for _, w := range why {
		log.Warn("--toolsets: " + w)
	}
	return nil
}

func serve(g *globalFlags, stderr io.Writer) int {
	log := newLogger(g.logLevel, stderr)
	if !tmuxUsable(log, stderr) {
		return 1
	}
	if interactive(os.Stdin) {
		// A person ran `fleetmux` by hand: say what it is waiting for.
		fmt.Fprintln(stderr, "fleetmux: serving MCP on stdin/stdout for an MCP client; press Ctrl-D or Ctrl-C to stop (fleetmux --help for commands)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g.warm = true
	srv, cleanup, err := build(ctx, g, log)
	if err != nil {
		fmt.Fprintf(stderr, "fleetmux: %v\n", err)
		return 1
	}
	defer cleanup()
	log.Info("fleetmux serving MCP on stdio", "name", mcp.ProductName, "version", version,
		"server_info", mcp.ServerName+" "+mcp.ServerVersion, "pid", os.Getpid())
	if err := srv.Run(ctx, stdio.NewTransport(os.Stdin, os.Stdout, log)); err != nil {
		log.Warn("session ended", "error", err)
	}
	return 0
}

// interactive reports whether f looks like a terminal: a character device
// other than /dev/null (good enough for a hint on stderr, without ioctls).
func interactive(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
