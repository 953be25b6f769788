package main

// Regression tests from issue 20's walk through fleetmux as a new user:
// `fleetmux version`, why `fleetmux call` answers "Unknown tool" (once),
// toolsets that are empty in local mode, plurals.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/cmd/internal/cli"
	"github.com/fleetmux/fleetmux/mcp"
)

func TestVersionCommand(t *testing.T) {
	_, want, _ := runCLI(t, "--version")
	for _, tc := range []struct {
		args    []string
		code    int
		stdout  string
		stderr  string
		inUsage bool
	}{
		{[]string{"version"}, 0, want, "", false},
		{[]string{"help", "version"}, 0, "Usage: fleetmux version", "", false},
		{[]string{"version", "--help"}, 0, "Usage: fleetmux version", "", false},
		{[]string{"version", "extra"}, 2, "", `fleetmux version: unexpected argument "extra"`, false},
		{[]string{"--help"}, 0, "fleetmux version ", "", true},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("%v: exit %d stdout %q stderr %q; want exit %d, stdout with %q, stderr with %q", tc.args, code, out, errOut, tc.code, tc.stdout, tc.stderr)
		}
		if tc.stdout == "" && out != "" || tc.stderr == "" && errOut != "" {
			t.Errorf("%v: unexpected output: stdout %q stderr %q", tc.args, out, errOut)
		}
	}
	if !strings.HasPrefix(want, "fleetmux ") {
		t.Fatalf("--version printed %q", want)
	}
}

// A tool the configuration hides is answered "Unknown tool" in the MCP
// result, as the reference does; the CLI says once on stderr which setting
// shows it.
func TestCallHiddenToolHint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		stderr string // the whole stderr
	}{
		{"destructive", nil, []string{"call", "kill_session", `{"session_name": "x"}`},
			"fleetmux call: Unknown tool: 'kill_session'. kill_session is a destructive tool; set LIBTMUX_SAFETY=destructive to enable it\n"},
		{"readonly env", map[string]string{"LIBTMUX_SAFETY": "readonly"}, []string{"call", "send_keys", `{"keys": "x"}`},
			"fleetmux call: Unknown tool: 'send_keys'. send_keys is a mutating tool; set LIBTMUX_SAFETY=mutating to enable it\n"},
		{"read-only flag", nil, []string{"call", "--read-only", "send_keys", `{"keys": "x"}`},
			"fleetmux call: Unknown tool: 'send_keys'. send_keys is a mutating tool; drop --read-only to enable it\n"},
		{"toolsets", nil, []string{"call", "--toolsets", "io", "list_windows"},
			"fleetmux call: Unknown tool: 'list_windows'. list_windows is in toolset windows, which --toolsets (or FLEETMUX_TOOLSETS) leaves out: add windows to it\n"},
		{"tier and toolsets", map[string]string{"FLEETMUX_TOOLSETS": "io"}, []string{"call", "kill_window"},
			"fleetmux call: Unknown tool: 'kill_window'. kill_window is a destructive tool; set LIBTMUX_SAFETY=destructive to enable it; kill_window is in toolset windows, which --toolsets (or FLEETMUX_TOOLSETS) leaves out: add windows to it\n"},
		{"fleet only", nil, []string{"call", "list_hosts"},
			"fleetmux call: Unknown tool: 'list_hosts'. list_hosts needs fleet mode: select hosts with --hosts PATTERNS (or FLEETMUX_HOSTS)\n"},
		{"extension", nil, []string{"call", "list_jobs"},
			"fleetmux call: Unknown tool: 'list_jobs'. list_jobs is one of fleetmux's extensions: pass --extensions (or set FLEETMUX_EXTENSIONS=1), or select hosts with --hosts\n"},
		{"no such tool", nil, []string{"call", "kill-session"},
			"fleetmux call: Unknown tool: 'kill-session'. no tool of that name; fleetmux tools lists them\n"},
		// Other errors: the result on stdout, its text once on stderr.
		{"tool error", nil, []string{"call", "list_windows", `{"session_name": "nosuch"}`},
			"fleetmux call: Object not found: Could not find session_name=nosuch for list-sessions () Call list_sessions / list_windows / list_panes to discover valid ids.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			privateEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, out, errOut := runCLI(t, append(tc.args, "--no-audit")...)
			if code != 1 || errOut != tc.stderr {
				t.Errorf("exit %d, stderr\n%q\nwant exit 1, stderr\n%q", code, errOut, tc.stderr)
			}
			// The MCP result is the reference's, untouched.
			var res struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || !res.IsError || len(res.Content) != 1 {
				t.Fatalf("stdout is not one error result: %v %q", err, out)
			}
			if text := res.Content[0].Text; !strings.Contains(tc.stderr, cli.OneLine(text)) || strings.Contains(text, "LIBTMUX_SAFETY") || strings.Contains(text, "--") {
				t.Errorf("result text %q changed", text)
			}
		})
	}
}

// A toolset with no tools in local mode is warned about; a selection of
// only such toolsets is refused. The rule is checked against what the
// server really lists for each toolset alone.
func TestToolsetsEmptyInLocalMode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{"fleet alone", nil, []string{"--toolsets", "fleet"}, 1,
			"fleetmux tools: --toolsets fleet: no tool to serve: toolset fleet has no tools in local mode (no --hosts): list_hosts needs fleet mode\n"},
		{"jobs alone", nil, []string{"--toolsets", "jobs"}, 1,
			"fleetmux tools: --toolsets jobs: no tool to serve: toolset jobs has no tools in local mode (no --hosts) without --extensions (or FLEETMUX_EXTENSIONS=1)\n"},
		{"env", map[string]string{"FLEETMUX_TOOLSETS": "fleet,jobs"}, nil, 1,
			"fleetmux tools: --toolsets fleet,jobs: no tool to serve: toolset fleet has no tools in local mode (no --hosts): list_hosts needs fleet mode; toolset jobs has no tools in local mode (no --hosts) without --extensions (or FLEETMUX_EXTENSIONS=1)\n"},
		{"fleet and hooks", nil, []string{"--toolsets", "fleet,hooks"}, 0,
			"--toolsets: toolset fleet has no tools in local mode (no --hosts): list_hosts needs fleet mode"},
		{"jobs with extensions", nil, []string{"--toolsets", "jobs", "--extensions"}, 0, ""},
		{"all", nil, nil, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			privateEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, errOut := runCLI(t, append([]string{"tools"}, tc.args...)...)
			if code != tc.code || tc.code != 0 && errOut != tc.stderr || tc.code == 0 && !strings.Contains(errOut, tc.stderr) || tc.stderr == "" && errOut != "" {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr %q", code, errOut, tc.code, tc.stderr)
			}
		})
	}

	privateEnv(t)
	for _, ts := range []string{"sessions", "windows", "panes", "io", "wait", "buffers", "options", "hooks", "batch", "fleet", "jobs"} {
		for _, ext := range []bool{false, true} {
			for _, tier := range []string{"readonly", "mutating", "destructive"} {
				t.Setenv("LIBTMUX_SAFETY", tier)
				args := []string{"tools", "--json", "--toolsets", "all"}
				if ext {
					args = append(args, "--extensions")
				}
				_, out, _ := runCLI(t, args...)
				var tools []struct {
					Name string `json:"name"`
				}
				if err := json.Unmarshal([]byte(out), &tools); err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, tl := range tools {
					if mcp.ToolsetOf(tl.Name) == ts {
						n++
					}
				}
				g := &globalFlags{extensions: ext}
				if empty := emptyToolsetReason(ts, g) != ""; empty != (n == 0) {
					t.Errorf("toolset %s (extensions %v, tier %s): %d tools listed, emptyToolsetReason says empty=%v", ts, ext, tier, n, empty)
				}
			}
		}
	}
	os.Unsetenv("LIBTMUX_SAFETY")
}

// `fleetmux hosts` and a --hosts that matches nothing name the files they
// read as a list of paths, and count in the right number.
func TestHostsFilesAndPlurals(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatal("fleet mode needs ssh:", err)
	}
	privateEnv(t)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	writeFile(t, cfg, "Host solo-1\n  HostName 127.0.0.1\n")
	_, out, _ := runCLI(t, "hosts", "--ssh-config", cfg)
	if !strings.Contains(out, "\n1 host from "+cfg+", /etc/ssh/ssh_config") {
		t.Errorf("hosts:\n%s", out)
	}
	code, _, errOut := runCLI(t, "tools", "--ssh-config", cfg, "--hosts", "nomatch")
	want := `fleetmux tools: --hosts "nomatch" matches no Host alias in ` + cfg + ", /etc/ssh/ssh_config"
	if code != 1 || !strings.HasPrefix(errOut, want) || strings.ContainsAny(errOut, "[]") {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q, no brackets", code, errOut, want)
	}
}

// doctor counts in the right number: "1 session", "1 warning".
func TestDoctorPlurals(t *testing.T) {
	_, state := doctorHome(t)
	sock := os.Getenv("LIBTMUX_SOCKET")
	if out, err := exec.Command("tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "one").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })
	_, out, _ := runCLI(t, "doctor", "--state", state)
	for _, want := range []string{"(LIBTMUX_SOCKET): 1 session\n", " 0 failed, 1 warning.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

// doctor recognises entries that reach fleetmux serve --http (by name, by
// the token of fleetmux's token file, or by what a URL on this machine
// answers) in each client file it reads, and checks that the daemon
// answers and takes the entry's token.
func TestDoctorHTTPRegistrations(t *testing.T) {
	// The daemon first: doctorHome sets variables fleetmux refuses empty.
	privateEnv(t)
	state := filepath.Join(t.TempDir(), "state", "state.db")
	d := startHTTPDaemon(t, nil, "--state", state)
	home, _ := doctorHome(t)
	tokenData, err := os.ReadFile(filepath.Join(filepath.Dir(state), tokenFileName))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tokenData))
	bearer := `{"Authorization": "Bearer ` + token + `"}`
	wrong := `{"Authorization": "Bearer not-the-token-0123456789"}`
	t.Setenv("FLEETMUX_TEST_TOKEN", token)
	files := map[string]string{
		// Claude Code: by name; by token; wrong token; no token; not fleetmux.
		".claude.json": `{"mcpServers": {
			"fleetmux": {"type": "http", "url": "` + d.url + `", "headers": ` + bearer + `},
			"tmuxd": {"type": "http", "url": "` + d.url + `", "headers": ` + bearer + `},
			"tmux-wrong": {"type": "http", "url": "` + d.url + `", "headers": ` + wrong + `},
			"tmux-none": {"type": "http", "url": "` + d.url + `"},
			"elsewhere": {"type": "http", "url": "https://mcp.example.invalid/mcp", "headers": {"Authorization": "Bearer secret"}}}}`,
		".cursor/mcp.json":      `{"mcpServers": {"tmux": {"url": "` + d.url + `", "headers": ` + bearer + `}}}`,
		".gemini/settings.json": `{"mcpServers": {"tmux": {"httpUrl": "` + d.url + `", "headers": ` + bearer + `}}}`,
		".codex/config.toml":    "[mcp_servers.tmux]\nurl = \"" + d.url + "\"\nbearer_token_env_var = \"FLEETMUX_TEST_TOKEN\"\n",
	}
	for p, text := range files {
		writeFile(t, filepath.Join(home, p), text)
	}
	t.Setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
	answered := "over HTTP at " + d.url + ", answered by fleetmux "
	want := []struct{ check, status, detail, fix string }{
		{`client Claude Code (~/.claude.json) "fleetmux" [user scope]`, statusOK, answered, ""},
		{`client Claude Code (~/.claude.json) "tmuxd" [user scope]`, statusOK, answered, ""},
		{`client Claude Code (~/.claude.json) "tmux-wrong" [user scope]`, statusFail, "the daemon refuses the entry's bearer token", "put the token of "},
		{`client Claude Code (~/.claude.json) "tmux-none" [user scope]`, statusFail, "the daemon wants a bearer token and the entry sends none", "Authorization: Bearer TOKEN"},
		{`client Cursor (~/.cursor/mcp.json) "tmux"`, statusOK, answered, ""},
		{`client Gemini CLI (~/.gemini/settings.json) "tmux"`, statusOK, answered, ""},
		{`client Codex (~/.codex/config.toml) "tmux"`, statusOK, answered, ""},
	}
	check := func(want []struct{ check, status, detail, fix string }) {
		t.Helper()
		_, r := runDoctorJSON(t, "--state", state)
		var clients []doctorCheck
		for _, c := range r.Checks {
			if strings.HasPrefix(c.Check, "client") {
				clients = append(clients, c)
			}
			if strings.Contains(c.Check, "elsewhere") || strings.Contains(c.Detail, "not registered") {
				t.Errorf("unexpected check %+v", c)
			}
		}
		if len(clients) != len(want) {
			t.Errorf("%d client checks, want %d: %+v", len(clients), len(want), clients)
		}
		for _, w := range want {
			found := r.find(w.check)
			if len(found) != 1 {
				t.Errorf("no check %q in %+v", w.check, clients)
				continue
			}
			c := found[0]
			if c.Status != w.status || !strings.Contains(c.Detail, w.detail) || !strings.Contains(c.Fix, w.fix) || (w.fix == "") != (c.Fix == "") {
				t.Errorf("%s: %s %q fix %q; want %s with %q, fix %q", w.check, c.Status, c.Detail, c.Fix, w.status, w.detail, w.fix)
			}
			if strings.Contains(c.Detail+c.Fix, token) {
				t.Errorf("%s: the token is in the report", w.check)
			}
		}
	}
	check(want)

	// The daemon stopped: the entries are still fleetmux's (by name or
	// token), and the fix says how to start it.
	if err := d.stop(t); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(d.url, "http://"), "/mcp")
	down := []struct{ check, status, detail, fix string }{
		{`client Claude Code (~/.claude.json) "fleetmux" [user scope]`, statusWarn, "nothing answers there", "fleetmux serve --http " + addr},
		{`client Claude Code (~/.claude.json) "tmuxd" [user scope]`, statusWarn, "nothing answers there", "fleetmux serve --http " + addr},
		{`client Cursor (~/.cursor/mcp.json) "tmux"`, statusWarn, "nothing answers there", "fleetmux serve --http " + addr},
		{`client Gemini CLI (~/.gemini/settings.json) "tmux"`, statusWarn, "nothing answers there", "fleetmux serve --http " + addr},
		{`client Codex (~/.codex/config.toml) "tmux"`, statusWarn, "nothing answers there", "fleetmux serve --http " + addr},
	}
	// tmux-wrong and tmux-none are nobody's once nothing answers: not
	// fleetmux's by name or token, so Claude Code's file says fleetmux
	// is registered (by the others) and lists no more.
	check(down)
}
