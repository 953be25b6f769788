package main

// Regression tests from a new user's walk through the README and the CLI:
// help on stdout (once), one-line usage errors, `fleetmux call` argument
// handling, `fleetmux tools`, bench usage, the audit reader, the store
// wiring, the client configs and the README's own commands.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	bolt "go.etcd.io/bbolt"

	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/store"
)

// runCLI runs the CLI in-process with a private tmux socket and state file.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func privateEnv(t *testing.T) string {
	t.Helper()
	t.Setenv("LIBTMUX_SOCKET", fmt.Sprintf("fleetmux-test-review-%d", os.Getpid()))
	t.Setenv("TMUX", "")
	t.Setenv("TMUX_PANE", "")
	t.Setenv("FLEETMUX_HOSTS", "")
	t.Setenv("FLEETMUX_TOOLSETS", "")
	t.Setenv("LIBTMUX_SAFETY", "")
	os.Unsetenv("LIBTMUX_SAFETY")
	state := filepath.Join(t.TempDir(), "state", "state.db")
	t.Setenv("FLEETMUX_STATE", state)
	return state
}

func TestHelpOnStdoutOnce(t *testing.T) {
	privateEnv(t)
	globals := flag.NewFlagSet("x", flag.ContinueOnError)
	var g globalFlags
	g.register(globals)
	var globalNames []string
	globals.VisitAll(func(f *flag.Flag) { globalNames = append(globalNames, f.Name) })

	for _, tt := range []struct {
		args  []string
		flags []string
	}{
		{[]string{"--help"}, append([]string{"version"}, globalNames...)},
		{[]string{"-h"}, nil},
		{[]string{"help"}, nil},
		{[]string{"tools", "--help"}, []string{"json", "hosts", "ssh-config", "no-local", "host-safety", "log-level"}},
		{[]string{"help", "tools"}, []string{"json"}},
		{[]string{"call", "--help"}, append([]string{"host"}, globalNames...)},
		{[]string{"call", "list_sessions", "--help"}, []string{"host"}},
		{[]string{"audit", "--help"}, []string{"state", "json", "host", "tool", "outcome", "job", "since", "until", "limit", "follow", "compact"}},
		{[]string{"bench", "--help"}, []string{"hosts", "ssh-config", "host", "n", "json"}},
		{[]string{"doctor", "--help"}, []string{"hosts", "ssh-config", "state", "json"}},
		{[]string{"help", "doctor"}, []string{"hosts"}},
		{[]string{"tools", "--help"}, []string{"toolsets", "read-only"}},
		{[]string{"serve", "--help"}, append([]string{"http", "token-file", "no-auth", "allow-remote"}, globalNames...)},
		{[]string{"help", "serve"}, []string{"http"}},
	} {
		code, out, errOut := runCLI(t, tt.args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "Usage") {
			t.Errorf("%v: exit %d, stderr %q, stdout %.200q", tt.args, code, errOut, out)
			continue
		}
		if strings.Count(out, "Usage") != 1 {
			t.Errorf("%v: usage printed %d times", tt.args, strings.Count(out, "Usage"))
		}
		for _, f := range tt.flags {
			if !strings.Contains(out, "--"+f+" ") && !strings.Contains(out, "--"+f+"\n") {
				t.Errorf("%v: help does not explain --%s", tt.args, f)
			}
		}
	}
	for _, sc := range []string{"serve", "tools", "call", "hosts", "audit", "bench", "doctor"} {
		if _, out, _ := runCLI(t, "--help"); !strings.Contains(out, "fleetmux "+sc) {
			t.Errorf("main help does not list %s", sc)
		}
	}
}

func TestUsageErrorsAreOneLine(t *testing.T) {
	state := privateEnv(t)
	for _, args := range [][]string{
		{"--bogus"},
		{"--audit-retention", "5x"},
		{"--log-level", "loud"},
		{"tools", "--log-level", "loud"},
		{"nope"},
		{"help", "nope"},
		{"tools", "--bogus"},
		{"tools", "extra"},
		{"call"},
		{"call", "a", "b", "c"},
		{"call", "list_sessions", "--bogus"},
		{"call", "list_sessions", "--audit-retention", "soon"},
		{"call", "list_sessions", "{bad"},
		{"call", "list_sessions", "[1,2]"},
		{"call", "list_sessions", `"x"`},
		{"call", "list_sessions", "{} {}"},
		{"call", "list_sessions", "--host", "dev-1"},
		{"call", "list_sessions", "null", "--host", "x"}, // panicked on a nil map
		{"audit", "--bogus"},
		{"audit", "--outcome", "fine"},
		{"audit", "extra"},
		{"bench", "--bogus"},
		{"bench", "extra"},
		{"bench", "--n", "0"},
		{"--toolsets", "bogus"},
		{"tools", "--toolsets", "io,,pane"},
		{"call", "list_sessions", "--toolsets", "nope"},
		{"doctor", "--bogus"},
		{"doctor", "extra"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "fleetmux") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line on stderr", args, code, out, errOut)
		}
		if strings.Contains(errOut, "goroutine") || strings.Contains(errOut, "panic") {
			t.Errorf("%v: stack trace %q", args, errOut)
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("a usage error created the state file: %v", err)
	}
	_, _, errOut := runCLI(t, "call", "list_sessions", "--host", "dev-1")
	if !strings.Contains(errOut, "fleet mode") || !strings.Contains(errOut, "--hosts") {
		t.Errorf("--host without fleet mode: %q", errOut)
	}
}

func TestParseCallArguments(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    string
		wantErr string
	}{
		{"", "{}", ""},
		{"  ", "{}", ""},
		{"null", "{}", ""},
		{`{"session_name": "a", "n": 2}`, `{"n":2,"session_name":"a"}`, ""},
		{"[1]", "", "not an array"},
		{"3", "", "not a number"},
		{"true", "", "not a boolean"},
		{`"s"`, "", "not a string"},
		{"{", "", "not valid JSON"},
		{"{} 1", "", "one JSON object"},
	} {
		got, err := parseCallArguments(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		b, _ := json.Marshal(got)
		if err != nil || string(b) != tt.want || got == nil {
			t.Errorf("%q: %s %v, want %s", tt.in, b, err, tt.want)
		}
	}
}

func TestCallFlagPositions(t *testing.T) {
	privateEnv(t)
	for _, args := range [][]string{
		{"call", "--no-audit", "list_sessions", "{}"},
		{"call", "list_sessions", "--no-audit", "{}"},
		{"call", "list_sessions", "{}", "--no-audit"},
		{"call", "--log-level", "error", "list_sessions", "--no-audit", "--", "{}"},
		{"call", "--no-audit", "--", "list_sessions"},
	} {
		if code, out, errOut := runCLI(t, args...); code != 0 || !strings.Contains(out, "structuredContent") {
			t.Errorf("%v: exit %d stdout %.100q stderr %q", args, code, out, errOut)
		}
	}
}

// `--host local` in local mode is this machine: accepted, and the tool gets
// no host argument (local-mode tools have none).
func TestCallHostLocalInLocalMode(t *testing.T) {
	privateEnv(t)
	code, out, errOut := runCLI(t, "call", "list_sessions", "null", "--host", "local", "--no-audit")
	if code != 0 || !strings.Contains(out, `"structuredContent"`) {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON document: %v", err)
	}
}

func TestToolsTableAndNoStateFile(t *testing.T) {
	state := privateEnv(t)
	t.Setenv("LIBTMUX_SAFETY", "destructive")
	code, out, errOut := runCLI(t, "tools")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
	table, summary, _ := strings.Cut(out, "\n\n")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 57 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(summary, "56 tools shown (safety tier destructive, toolsets all).") {
		t.Fatalf("%d lines (want a header and 56 tools):\n%s", len(lines), out)
	}
	tiers := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		tiers[f[0]] = f[1]
	}
	for tool, want := range map[string]string{
		"list_sessions": "readonly", "call_mutating_tools_batch": "mutating", "clear_pane": "mutating",
		"kill_server": "destructive", "kill_pane": "destructive", "send_keys": "mutating",
	} {
		if tiers[tool] != want {
			t.Errorf("%s: tier %q, want %q", tool, tiers[tool], want)
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("fleetmux tools created the state file: %v", err)
	}
}

// --toolsets, FLEETMUX_TOOLSETS and --read-only select what `fleetmux
// tools` lists and counts; an unknown toolset is a usage error naming
// the valid ones.
func TestToolsetFlags(t *testing.T) {
	privateEnv(t)
	for _, tc := range []struct {
		name    string
		env     string
		args    []string
		code    int
		summary string
		rows    map[string]string // toolset -> "SHOWN AVAILABLE"
	}{
		{"default", "", nil, 0, "51 tools shown (safety tier mutating, toolsets all).", map[string]string{"sessions": "6 6", "batch": "2 2", "fleet": "0 0"}},
		{"cursor cap", "", []string{"--toolsets", "sessions,windows,panes,io,wait"}, 0, "39 tools shown (safety tier mutating, toolsets sessions,windows,panes,io,wait).", map[string]string{"panes": "12 12", "options": "0 4"}},
		{"env", "io", nil, 0, "10 tools shown (safety tier mutating, toolsets io).", map[string]string{"io": "10 10", "sessions": "0 6"}},
		{"flag beats env", "io", []string{"--toolsets", "hooks"}, 0, "2 tools shown (safety tier mutating, toolsets hooks).", nil},
		{"read-only", "", []string{"--read-only"}, 0, "21 tools shown (safety tier readonly, toolsets all).", map[string]string{"io": "5 5", "batch": "1 1"}},
		{"read-only and a set", "", []string{"--read-only", "--toolsets", "panes"}, 0, "3 tools shown (safety tier readonly, toolsets panes).", nil},
		{"unknown", "", []string{"--toolsets", "io,pane"}, 2, "", nil},
		{"unknown in env", "nope", nil, 2, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FLEETMUX_TOOLSETS", tc.env)
			code, out, errOut := runCLI(t, append([]string{"tools"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errOut)
			}
			if tc.code == 2 {
				if !strings.Contains(errOut, "valid toolsets: sessions,windows,panes,io,wait,buffers,options,hooks,batch,fleet") || strings.Count(errOut, "\n") != 1 {
					t.Errorf("usage error %q does not list the valid toolsets on one line", errOut)
				}
				return
			}
			if !strings.Contains(out, "\n"+tc.summary+"\n") {
				t.Errorf("no summary %q in:\n%s", tc.summary, out)
			}
			for set, want := range tc.rows {
				m := regexp.MustCompile(`(?m)^` + set + ` +(\d+) +(\d+) `).FindStringSubmatch(out)
				if m == nil || m[1]+" "+m[2] != want {
					t.Errorf("toolset %s: %v, want %s", set, m, want)
				}
			}
		})
	}
}

func TestRetentionFlag(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "90d": 90 * 24 * time.Hour, "72h": 72 * time.Hour, "1d12h": 36 * time.Hour} {
		var a agoFlag
		if err := a.Set(in); err != nil || a.d != want || a.String() != in {
			t.Errorf("%q: %v %v", in, a.d, err)
		}
	}
	for _, in := range []string{"", "soon", "5x", "-1h", "1dx"} {
		var a agoFlag
		if err := a.Set(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var g globalFlags
	g.register(fs)
	if g.retention.d != 90*24*time.Hour || fs.Lookup("audit-retention").DefValue != "90d" {
		t.Errorf("default retention %v %q", g.retention.d, fs.Lookup("audit-retention").DefValue)
	}
}

// A state file that is locked when fleetmux starts is not given up on: the
// records of later calls are written once the lock is free.
func TestWireStoreLockedAtStartup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if _, err := store.Open(path, store.Options{}); err != nil {
		t.Fatal(err)
	}
	holder, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	old := storeLockTimeout
	storeLockTimeout = 200 * time.Millisecond
	defer func() { storeLockTimeout = old }()

	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var g globalFlags
	g.register(fs)
	g.state = path
	var logs bytes.Buffer
	opened, stop := openStore(context.Background(), &g, slog.New(slog.NewTextHandler(&logs, nil)))
	defer stop()
	holder.Close()
	if opened == nil {
		t.Fatalf("no store after a busy start-up; log:\n%s", logs.String())
	}
	var auditor mcp.Auditor = &storeAuditor{st: opened, pid: os.Getpid()}
	if !strings.Contains(logs.String(), "busy") {
		t.Errorf("log %q", logs.String())
	}
	if err := auditor.Append(context.Background(), mcp.AuditEvent{Time: time.Now(), Host: "local", Tool: "list_sessions", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.Query(context.Background(), store.Query{Tool: "list_sessions"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %v %v", recs, err)
	}
}

// Each client config is valid JSON/TOML, starts fleetmux, and its
// arguments and environment build a server (local mode, no hosts needed).
func TestClientConfigs(t *testing.T) {
	privateEnv(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "configs", "*"))
	if err != nil || len(files) == 0 {
		t.Fatal("no configs", err)
	}
	seen := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var servers map[string]configServer
		switch filepath.Ext(f) {
		case ".json":
			var doc struct {
				MCPServers map[string]configServer `json:"mcpServers"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			servers = doc.MCPServers
		case ".toml":
			// Codex's [mcp_servers.NAME] tables, read with the TOML
			// library doctor reads them with.
			var doc struct {
				MCPServers map[string]configServer `toml:"mcp_servers"`
			}
			if _, err := toml.Decode(string(data), &doc); err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			servers = doc.MCPServers
		case ".sh":
			if out, err := exec.Command("sh", "-n", f).CombinedOutput(); err != nil {
				t.Errorf("%s: %v %s", f, err, out)
			}
			continue
		default:
			continue
		}
		if len(servers) == 0 {
			t.Errorf("%s: no MCP server entry", f)
		}
		for name, sv := range servers {
			seen++
			if sv.Command != configPlaceholder {
				t.Errorf("%s/%s: command %q, want the absolute-path placeholder %q that configs/README.md explains", f, name, sv.Command, configPlaceholder)
			}
			if _, ok := sv.Env["LIBTMUX_SAFETY"]; !ok {
				t.Errorf("%s/%s: no env with LIBTMUX_SAFETY: settings belong in the entry's env", f, name)
			}
			for k, v := range sv.Env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("fleetmux", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var g globalFlags
			g.register(fs)
			if err := fs.Parse(sv.Args); err != nil || fs.NArg() != 0 {
				t.Errorf("%s/%s: args %q: %v", f, name, sv.Args, err)
				continue
			}
			g.noAudit = true
			_, cleanup, err := build(context.Background(), &g, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Errorf("%s/%s: fleetmux %s would not start: %v", f, name, strings.Join(sv.Args, " "), err)
				continue
			}
			cleanup()
		}
	}
	if seen < 4 {
		t.Errorf("only %d server entries checked", seen)
	}
}

type configServer struct {
	Command string            `json:"command" toml:"command"`
	Args    []string          `json:"args" toml:"args"`
	Env     map[string]string `json:"env" toml:"env"`
}

// fakeClaude puts a `claude` on PATH that records its arguments, one a
// line, each call ended by a line "--end--", and returns the file they are
// written to.
func fakeClaude(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rec := filepath.Join(dir, "claude-args")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> " + rec + "\necho --end-- >> " + rec + "\n"
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return rec
}

// The README's install-and-register command and configs/claude-code.sh
// install (or find) the binary and register its absolute path.
func TestInstallAndRegisterCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go install")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Install and register.*?```sh\n(.*?)\n```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no install command block")
	}
	gobin := t.TempDir()
	t.Setenv("GOBIN", gobin)
	for _, v := range []string{"LIBTMUX_SAFETY", "LIBTMUX_SOCKET_PATH", "LIBTMUX_TMUX_BIN", "LIBTMUX_SUPPRESS_HISTORY", "LIBTMUX_MCP_WAIT_MAX_SECONDS", "FLEETMUX_HOSTS", "FLEETMUX_SSH_CONFIG", "FLEETMUX_STATE", "FLEETMUX_TOOLSETS", "TMUX_TMPDIR"} {
		t.Setenv(v, "")
	}
	// configs/claude-code.sh stores the settings of the environment in the
	// entry; the README's one-liner registers the bare command.
	t.Setenv("LIBTMUX_SOCKET", `work "a" $b`)
	for _, c := range []struct{ name, script string }{
		{"README", string(m[1])},
		{"configs/claude-code.sh", "sh configs/claude-code.sh"},
	} {
		rec := fakeClaude(t)
		cmd := exec.Command("sh", "-c", c.script)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		got, err := os.ReadFile(rec)
		if err != nil {
			t.Fatalf("%s: claude was not run: %v", c.name, err)
		}
		want := "mcp\nadd\n--scope\nuser\nfleetmux\n--\n" + filepath.Join(gobin, "fleetmux") + "\n--end--\n"
		if c.name != "README" {
			// An entry of that name is replaced, so that running it
			// again (or after the README's one-liner) works.
			want = "mcp\nremove\n--scope\nuser\nfleetmux\n--end--\n" +
				"mcp\nadd\n--scope\nuser\nfleetmux\n-e\nLIBTMUX_SOCKET=work \"a\" $b\n--\n" + filepath.Join(gobin, "fleetmux") + "\n--end--\n"
		}
		if string(got) != want {
			t.Errorf("%s: claude was run as\n%s\nwant\n%s", c.name, got, want)
		}
		out, err := exec.Command(filepath.Join(gobin, "fleetmux"), "--version").Output()
		if err != nil || !strings.HasPrefix(string(out), "fleetmux ") {
			t.Errorf("%s: registered binary: %v %q", c.name, err, out)
		}
	}
}

// Every `claude mcp add` the README and configs/ show puts the server's
// name before its options' values: -e (and --header) read every following
// word, so `claude mcp add -e A=1 fleetmux -- cmd` fails with "missing
// required argument 'commandOrUrl'".
func TestClaudeAddCommandsNameFirst(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "configs", "*"))
	files = append(files, filepath.Join("..", "..", "README.md"))
	seen := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`claude mcp add((?: +\S+)+)`).FindAllStringSubmatch(string(data), -1) {
			seen++
			words := strings.Fields(strings.Trim(m[1], "`"))
			for len(words) >= 2 && slices.Contains([]string{"--scope", "-s", "--transport", "-t"}, words[0]) {
				words = words[2:]
			}
			if len(words) == 0 || strings.HasPrefix(words[0], "-") || words[0] == "..." {
				t.Errorf("%s: `claude mcp add%s`: the server's name must come right after the --scope/--transport options", f, m[1])
			}
		}
	}
	if seen < 4 {
		t.Errorf("only %d claude mcp add commands found", seen)
	}
}

// Every flag and subcommand the README shows exists and is explained by
// some --help text.
func TestReadmeFlagsAndCommandsExist(t *testing.T) {
	privateEnv(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var help strings.Builder
	for _, args := range [][]string{{"--help"}, {"tools", "--help"}, {"call", "--help"}, {"hosts", "--help"}, {"audit", "--help"}, {"bench", "--help"}, {"doctor", "--help"}, {"serve", "--help"}} {
		_, out, errOut := runCLI(t, args...)
		help.WriteString(out + errOut)
	}
	code := regexp.MustCompile("(?s)```.*?```|`[^`\n]+`").FindAllString(string(readme), -1)
	spans := strings.Join(code, "\n")
	for _, f := range regexp.MustCompile(`(?:^|[\s\[(])--([a-z][a-z-]*)`).FindAllStringSubmatch(spans, -1) {
		if f[1] == "help" {
			continue
		}
		if !strings.Contains(help.String(), "--"+f[1]) {
			t.Errorf("README mentions --%s, which no help text explains", f[1])
		}
	}
	// "fleetmux http://..." is a server name followed by its URL.
	for _, c := range regexp.MustCompile(`\bfleetmux ([a-z][a-z-]*)(:?)`).FindAllStringSubmatch(spans, -1) {
		if _, ok := subcommands[c[1]]; !ok && c[1] != "help" && c[2] == "" {
			t.Errorf("README shows `fleetmux %s`, which is not a command", c[1])
		}
	}
}
