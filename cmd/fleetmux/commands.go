package main

// The subcommands that run in this process without serving: tools and
// call, through an in-process MCP client.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/cmd/internal/cli"
	"github.com/fleetmux/fleetmux/mcp"
)

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
	fmt.Fprintf(w, "\n%s shown (safety tier %s, toolsets %s).\n\n", cli.CountOf(total, "tool", "tools"), settings.Safety, sets)
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
// _meta.fastmcp.tags, as the reference publishes it, else a guess from the
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
		msg := "fleetmux call: " + cli.OneLine(firstText(res))
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
