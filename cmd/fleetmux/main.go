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
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/mcp/stdio"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0"

// subcommands maps a subcommand name to its entry point.
var subcommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"tools":   runTools,
	"call":    runCall,
	"hosts":   runHosts,
	"audit":   runAudit,
	"bench":   runBench,
	"serve":   runServe,
	"version": runVersion,
}

// doctor reads the subcommand table (an entry of a client config may name
// a subcommand), so it joins the table at init.
func init() { subcommands["doctor"] = runDoctor }

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

// agoFlag is an age such as 90d or 72h (see parseAgo), checked while the
// flags are parsed so that a bad value is a usage error.
type agoFlag struct {
	text string
	d    time.Duration
}

func (a *agoFlag) String() string { return a.text }

func (a *agoFlag) Set(v string) error {
	d, ok, err := parseAgo(v)
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

// countOf is "1 host", "2 hosts": n and the word in its number.
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
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

// inProcess builds a server and connects an in-memory client to it. help
// prints the command's help on stdout for --help; check validates the
// parsed flags and arguments before anything is opened (a result >= 0 is
// the exit status). rc is -1 when the session is ready.
func inProcess(args []string, name string, stdout, stderr io.Writer, extra func(fs *flag.FlagSet), help func(w io.Writer, fs *flag.FlagSet), check func(fs *flag.FlagSet, g *globalFlags) int) (cs *sdk.ClientSession, done func(), fs *flag.FlagSet, rc int) {
	fs = flag.NewFlagSet("fleetmux "+name, flag.ContinueOnError)
	var g globalFlags
	g.register(fs)
	if extra != nil {
		extra(fs)
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			help(stdout, fs)
			return nil, nil, nil, 0
		}
		return nil, nil, nil, 2
	}
	if check != nil {
		if rc := check(fs, &g); rc >= 0 {
			return nil, nil, nil, rc
		}
	}
	ctx := context.Background()
	log := newLogger(g.logLevel, stderr)
	if g.quietToolErrors {
		log = slog.New(dropToolErrors{log.Handler()})
	}
	srv, cleanup, err := build(ctx, &g, log)
	if err != nil {
		fmt.Fprintf(stderr, "fleetmux %s: %v\n", name, err)
		return nil, nil, nil, 1
	}
	cs, closeFn, err := srv.InProcess(ctx, "fleetmux-cli")
	if err != nil {
		cleanup()
		fmt.Fprintf(stderr, "fleetmux %s: %v\n", name, err)
		return nil, nil, nil, 1
	}
	return cs, func() { closeFn(); cleanup() }, fs, -1
}

const toolsUsage = `Usage: fleetmux tools [--json] [flags]

Lists the tools an MCP client sees with this configuration and environment:
name, safety tier, toolset and title, then how many tools each toolset
holds. LIBTMUX_SAFETY selects the tiers: readonly (also --read-only),
mutating (the default: all but the 5 destructive tools, 51) or destructive
(all 56). --toolsets (or FLEETMUX_TOOLSETS) shows only the tools of the
toolsets it names, to fit clients that cap the number of tools (Cursor: 40).
Fleet mode (--hosts) adds list_hosts and a "host" argument to every tool;
fleet mode or --extensions adds get_job, list_jobs and cancel_job.
Listing records nothing and does not open the state file.

  --json
      print the tools/list entries (schemas, annotations, _meta) as a JSON array

Flags shared with serving:
`

const toolsFooter = `
Exit status: 0 on success, 1 when the server could not be built, 2 on bad usage.
`

func runTools(args []string, stdout, stderr io.Writer) int {
	var (
		asJSON bool
		flags  *globalFlags
	)
	cs, done, _, rc := inProcess(args, "tools", stdout, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print the full tools/list result as JSON")
	}, func(w io.Writer, fs *flag.FlagSet) {
		fmt.Fprint(w, toolsUsage)
		printFlagsExcept(w, fs, "json", "state", "no-audit", "audit-retention")
		fmt.Fprint(w, toolsFooter)
	}, func(fs *flag.FlagSet, g *globalFlags) int {
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "fleetmux tools: unexpected argument %q (see fleetmux tools --help)\n", fs.Arg(0))
			return 2
		}
		// tools/list is not audited: leave the state file alone.
		g.noAudit = true
		flags = g
		return -1
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
	fmt.Fprintf(stdout, "%-30s %-11s %-9s %s\n", "NAME", "TIER", "TOOLSET", "TITLE")
	shown := map[string]int{}
	for _, t := range res.Tools {
		set := mcp.ToolsetOf(t.Name)
		shown[set]++
		fmt.Fprintf(stdout, "%-30s %-11s %-9s %s\n", t.Name, toolTier(t), set, t.Title)
	}
	printToolsetCounts(stdout, flags, shown, len(res.Tools))
	return 0
}

// printToolsetCounts writes the per-toolset summary of `fleetmux tools`:
// the tools shown and the tools the safety tier admits in each toolset
// (what naming it in --toolsets shows).
func printToolsetCounts(w io.Writer, g *globalFlags, shown map[string]int, total int) {
	settings, _ := mcp.SettingsFromEnv(nil) // already checked by build
	if g.readOnly {
		settings.Safety = mcp.TierReadonly
	}
	fleet := g.hosts != ""
	sizes := mcp.ToolsetSizes(settings.Safety, fleet, g.extensions)
	sets := "all"
	if list, _ := mcp.ParseToolsets(g.toolsets); list != nil {
		sets = strings.Join(list, ",")
	}
	fmt.Fprintf(w, "\n%s shown (safety tier %s, toolsets %s).\n\n", countOf(total, "tool", "tools"), settings.Safety, sets)
	fmt.Fprintf(w, "%-9s %5s %9s  %s\n", "TOOLSET", "SHOWN", "AVAILABLE", "HOLDS")
	for _, ts := range mcp.Toolsets() {
		fmt.Fprintf(w, "%-9s %5d %9d  %s\n", ts.Name, shown[ts.Name], sizes[ts.Name], ts.About)
	}
	fmt.Fprintln(w, "\nAVAILABLE counts the toolset's tools within the safety tier: what naming it in\n--toolsets (or FLEETMUX_TOOLSETS) shows.")
	if !fleet && !g.extensions {
		fmt.Fprintln(w, "The fleet toolset is served in fleet mode (--hosts), the jobs toolset in fleet\nmode or with --extensions.")
	}
}

// toolTier is the safety tier of a listed tool: its tag in
// _meta.fastmcp.tags, as the anchor publishes it, else a guess from the
// annotations.
func toolTier(t *sdk.Tool) string {
	if fm, ok := t.Meta["fastmcp"].(map[string]any); ok {
		if tags, ok := fm["tags"].([]any); ok {
			for _, tag := range tags {
				switch tag {
				case "readonly", "mutating", "destructive":
					return tag.(string)
				}
			}
		}
	}
	if a := t.Annotations; a != nil && a.ReadOnlyHint {
		return "readonly"
	}
	return "mutating"
}

// printFlagsExcept is printFlags without the named flags (documented
// separately above the shared ones).
func printFlagsExcept(w io.Writer, fs *flag.FlagSet, skip ...string) {
	shared := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.Contains(skip, f.Name) {
			shared.Var(f.Value, f.Name, f.Usage)
			shared.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	printFlags(w, shared)
}

const callUsage = `Usage: fleetmux call TOOL [JSON] [--host H] [flags]

Runs one tool in-process, as an MCP client's tools/call would (same argument
validation, safety tier and audit record), and prints the MCP result
(content, structuredContent, isError, _meta) as indented JSON on stdout.

  TOOL
      a tool name, see "fleetmux tools" (LIBTMUX_SAFETY applies)
  JSON
      the arguments as one JSON object, e.g. '{"session_name": "dev"}';
      omitted, '' or null means {}
  --host H
      run on host H (sets the tool's "host" argument); needs fleet mode
      (--hosts or FLEETMUX_HOSTS); "local" is this machine

Flags may come before or after TOOL and JSON.

Flags shared with serving:
`

const callFooter = `
Exit status: 0 when the tool succeeded; 1 when it returned an error result
(printed on stdout like any result) or fleetmux could not start; 2 on bad
usage (unknown flag, arguments that are not a JSON object, --host without
fleet mode).
`

func runCall(args []string, stdout, stderr io.Writer) int {
	var (
		host string
		gf   *globalFlags
	)
	// Flags may come before or after TOOL and JSON: gather them first. "--"
	// ends the flags.
	var pos, flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && flagTakesValue(a) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	var arguments map[string]any
	cs, done, fs, rc := inProcess(append(append(flags, "--"), pos...), "call", stdout, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&host, "host", "", "host to run on (fleet mode)")
	}, func(w io.Writer, fs *flag.FlagSet) {
		fmt.Fprint(w, callUsage)
		printFlagsExcept(w, fs, "host")
		fmt.Fprint(w, callFooter)
	}, func(fs *flag.FlagSet, g *globalFlags) int {
		if fs.NArg() < 1 || fs.NArg() > 2 {
			fmt.Fprintln(stderr, "fleetmux call: usage: fleetmux call TOOL ['{\"arg\": \"value\"}'] [--host H] (see fleetmux call --help)")
			return 2
		}
		var err error
		if arguments, err = parseCallArguments(fs.Arg(1)); err != nil {
			fmt.Fprintf(stderr, "fleetmux call: %v\n", err)
			return 2
		}
		g.quietToolErrors = true
		gf = g
		switch {
		case host == "":
		case g.hosts != "":
			arguments["host"] = host
		case host == mcp.LocalHost:
			// Local mode has only this machine; its tools take no host.
		default:
			fmt.Fprintf(stderr, "fleetmux call: --host %s needs fleet mode: select hosts with --hosts PATTERNS (or FLEETMUX_HOSTS)\n", host)
			return 2
		}
		return -1
	})
	if rc >= 0 {
		return rc
	}
	defer done()
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
		msg := "fleetmux call: " + oneLine(firstText(res))
		if strings.HasPrefix(firstText(res), "Unknown tool") {
			if hint := hiddenToolHint(fs.Arg(0), gf); hint != "" {
				msg += ". " + hint
			}
		}
		fmt.Fprintln(stderr, msg)
		return 1
	}
	return 0
}

// dropToolErrors is a log handler without the server's records of failed
// tool calls ("Error in tools/call: ..."), for `fleetmux call`, which
// prints the result itself.
type dropToolErrors struct{ slog.Handler }

func (h dropToolErrors) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "Error in tools/call: ") {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h dropToolErrors) WithAttrs(attrs []slog.Attr) slog.Handler {
	return dropToolErrors{h.Handler.WithAttrs(attrs)}
}

func (h dropToolErrors) WithGroup(name string) slog.Handler {
	return dropToolErrors{h.Handler.WithGroup(name)}
}

// firstText is the text of a tool result's first text content.
func firstText(res *sdk.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// hiddenToolHint says why the tool named is not served with these flags
// and environment, and which setting shows it; "" when none does.
func hiddenToolHint(name string, g *globalFlags) string {
	set := mcp.ToolsetOf(name)
	if set == "" {
		return "no tool of that name; fleetmux tools lists them"
	}
	if emptyToolsetReason(set, g) != "" {
		if set == "fleet" {
			return name + " needs fleet mode: select hosts with --hosts PATTERNS (or FLEETMUX_HOSTS)"
		}
		return name + " is one of fleetmux's extensions: pass --extensions (or set FLEETMUX_EXTENSIONS=1), or select hosts with --hosts"
	}
	var hints []string
	settings, _ := mcp.SettingsFromEnv(nil) // already checked by build
	if tier, ok := catalogTier(name); ok && tier > settings.Safety {
		hints = append(hints, fmt.Sprintf("%s is a %s tool; set LIBTMUX_SAFETY=%s to enable it", name, tier, tier))
	} else if ok && g.readOnly && tier > mcp.TierReadonly {
		hints = append(hints, fmt.Sprintf("%s is a %s tool; drop --read-only to enable it", name, tier))
	}
	if sets, _ := mcp.ParseToolsets(g.toolsets); sets != nil && !slices.Contains(sets, set) {
		hints = append(hints, fmt.Sprintf("%s is in toolset %s, which --toolsets (or FLEETMUX_TOOLSETS) leaves out: add %s to it", name, set, set))
	}
	return strings.Join(hints, "; ")
}

// catalogTier is the safety tier of the tool named, read from the listing
// of a server that shows every tool (local mode: list_hosts is not in it).
func catalogTier(name string) (mcp.Tier, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := mcp.New(mcp.Options{Settings: mcp.Settings{Safety: mcp.TierDestructive}, Extensions: true})
	if err != nil {
		return 0, false
	}
	cs, done, err := srv.InProcess(ctx, "fleetmux-cli")
	if err != nil {
		return 0, false
	}
	defer done()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return 0, false
	}
	for _, t := range res.Tools {
		if t.Name == name {
			return mcp.ParseTier(toolTier(t))
		}
	}
	return 0, false
}

// parseCallArguments reads the JSON argument of `fleetmux call`: an object,
// or nothing (empty, null) for no arguments.
func parseCallArguments(text string) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return map[string]any{}, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON (%v); want an object such as '{\"session_name\": \"dev\"}'", err)
	}
	if dec.More() {
		return nil, errors.New("arguments must be one JSON object, found more after it")
	}
	switch a := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return a, nil
	default:
		return nil, fmt.Errorf("arguments must be a JSON object such as '{\"session_name\": \"dev\"}', not %s", jsonKind(v))
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}

func flagTakesValue(a string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	switch name {
	case "no-local", "no-audit", "extensions", "json", "version", "help", "h", "read-only":
		return false
	}
	return true
}
