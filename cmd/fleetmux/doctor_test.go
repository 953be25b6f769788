package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fleetmux/fleetmux/cmd/internal/doctor"
	"github.com/fleetmux/fleetmux/store"
)

// The doctor package's names, as these tests (which run doctor through
// the fleetmux command) knew them.
type doctorCheck = doctor.Check

const (
	statusOK          = doctor.StatusOK
	statusWarn        = doctor.StatusWarn
	statusFail        = doctor.StatusFail
	configPlaceholder = doctor.ConfigPlaceholder
)

// doctorResult is the --json output of fleetmux doctor.
type doctorResult struct {
	Checks   []doctorCheck `json:"checks"`
	OK       bool          `json:"ok"`
	Warnings int           `json:"warnings"`
	Failures int           `json:"failures"`
}

// find returns the checks whose name starts with prefix.
func (r doctorResult) find(prefix string) []doctorCheck {
	var out []doctorCheck
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Check, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// doctorHome gives the test a private HOME and working directory (a
// folder "proj" in it) and clears the variables doctor reads. It returns
// the home and the state file path to pass with --state.
func doctorHome(t *testing.T) (home, state string) {
	t.Helper()
	privateEnv(t)
	home = t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"XDG_STATE_HOME", "XDG_CONFIG_HOME", "CODEX_HOME", "GEMINI_CLI_TRUST_WORKSPACE",
		"GEMINI_CLI_TRUSTED_FOLDERS_PATH", "SSH_AUTH_SOCK", "FLEETMUX_STATE", "FLEETMUX_SSH_CONFIG",
		"LIBTMUX_SOCKET_PATH", "LIBTMUX_TMUX_BIN", "LIBTMUX_SUPPRESS_HISTORY", "LIBTMUX_MCP_WAIT_MAX_SECONDS", "TMUX_TMPDIR"} {
		t.Setenv(v, "")
	}
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	return home, filepath.Join(home, "state", "state.db")
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func runDoctorJSON(t *testing.T, args ...string) (int, doctorResult) {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"doctor", "--json"}, args...)...)
	var r doctorResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json: %v\nstdout %s\nstderr %s", err, out, errOut)
	}
	if r.OK != (code == 0) || r.OK != (r.Failures == 0) {
		t.Errorf("exit %d, ok %v, %d failures", code, r.OK, r.Failures)
	}
	return code, r
}

func TestDoctorClientConfigs(t *testing.T) {
	sock := "LIBTMUX_SOCKET" // set by privateEnv; entries carry it
	entry := func(cmd string, args []string, env map[string]string) string {
		b, _ := json.Marshal(map[string]any{"command": cmd, "args": args, "env": env})
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		files  map[string]string // path under HOME ("proj/" is the working directory) -> content; "@BIN" is the binary
		env    map[string]string
		check  string // prefix of the checks to look at
		status string
		want   []string // in the detail
		fix    string   // in the fix
		code   int
	}{
		{name: "no client config", check: "clients", status: statusWarn, want: []string{"no MCP client configuration found"}, fix: "configs/README.md"},
		{name: "claude code user scope",
			files:  map[string]string{".claude.json": `{"mcpServers": {"tmux": ` + entry("@BIN", nil, map[string]string{sock: "@SOCK"}) + `}}`},
			check:  "client Claude Code (~/.claude.json) \"tmux\" [user scope]",
			status: statusOK, want: []string{"@BIN (", "env LIBTMUX_SOCKET"}},
		{name: "claude code one project only",
			files:  map[string]string{".claude.json": `{"projects": {"/src/x": {"mcpServers": {"tmux": ` + entry("@BIN", nil, map[string]string{sock: "@SOCK"}) + `}}}}`},
			check:  "client Claude Code (~/.claude.json) \"tmux\" [local scope, /src/x only]",
			status: statusWarn, want: []string{"registered for one directory only"}, fix: "claude mcp add --scope user tmux -- @BIN"},
		{name: "claude code without fleetmux",
			files: map[string]string{".claude.json": `{"mcpServers": {"tmux": {"command": "uvx", "args": ["libtmux-mcp"]}}}`},
			check: "client Claude Code (~/.claude.json)", status: statusWarn, want: []string{"fleetmux is not registered here"}, fix: "claude mcp add --scope user fleetmux"},
		{name: "claude code project .mcp.json",
			files: map[string]string{"proj/.mcp.json": `{"mcpServers": {"tmux": ` + entry("@BIN", nil, map[string]string{sock: "@SOCK"}) + `}}`},
			check: "client Claude Code (~/proj/.mcp.json) \"tmux\" [project scope]", status: statusOK},
		{name: "setting missing from env",
			files: map[string]string{".cursor/mcp.json": `{"mcpServers": {"tmux": ` + entry("@BIN", []string{"--toolsets", "io"}, nil) + `}}`},
			check: "client Cursor (~/.cursor/mcp.json) \"tmux\"", status: statusWarn,
			want: []string{"LIBTMUX_SOCKET set in your environment but not in the entry's env", "minimal environment"}, fix: "add LIBTMUX_SOCKET=@SOCK to the entry's env"},
		{name: "TMUX_TMPDIR missing from env",
			env:   map[string]string{"TMUX_TMPDIR": "@HOME/tmuxdir"},
			files: map[string]string{".cursor/mcp.json": `{"mcpServers": {"tmux": ` + entry("@BIN", nil, map[string]string{sock: "@SOCK"}) + `}}`},
			check: "client Cursor (~/.cursor/mcp.json) \"tmux\"", status: statusWarn,
			want: []string{"TMUX_TMPDIR set in your environment but not in the entry's env"}, fix: "add TMUX_TMPDIR=@HOME/tmuxdir to the entry's env"},
		{name: "the name fleetmux is taken",
			files: map[string]string{".claude.json": `{"mcpServers": {"fleetmux": {"command": "npx", "args": ["other-server"]}}}`},
			check: "client Claude Code (~/.claude.json)", status: statusWarn, want: []string{"fleetmux is not registered here"}, fix: "claude mcp add --scope user fleetmux-2 -- "},
		{name: "flag stands for the variable",
			env:   map[string]string{"FLEETMUX_TOOLSETS": "io"},
			files: map[string]string{".cursor/mcp.json": `{"mcpServers": {"tmux": ` + entry("@BIN", []string{"--toolsets=io"}, map[string]string{sock: "@SOCK"}) + `}}`},
			check: "client Cursor", status: statusOK},
		{name: "bare command not on PATH",
			files: map[string]string{".cursor/mcp.json": `{"mcpServers": {"tmux": ` + entry("fleetmux", nil, map[string]string{sock: "@SOCK"}) + `}}`},
			check: "client Cursor", status: statusFail, want: []string{`the command "fleetmux" is not on PATH`}, fix: "use the absolute path", code: 1},
		{name: "placeholder left in",
			files: map[string]string{".gemini/settings.json": "// mine\n{\"mcpServers\": {\"tmux\": " + entry(configPlaceholder, nil, map[string]string{sock: "@SOCK"}) + "}}"},
			env:   map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"},
			check: "client Gemini CLI (~/.gemini/settings.json)", status: statusFail, want: []string{"still the placeholder"}, fix: "replace it with", code: 1},
		{name: "gemini untrusted folder",
			files: map[string]string{".gemini/settings.json": `{"mcpServers": {"tmux": ` + entry("@BIN", nil, map[string]string{sock: "@SOCK"}) + `}}`},
			check: "client Gemini CLI", status: statusWarn, want: []string{"disables MCP servers in folders it does not trust", "@HOME/proj is not trusted"}, fix: `{"@HOME/proj": "TRUST_FOLDER"}`},
		{name: "gemini trusted parent",
			files: map[string]string{
				".gemini/settings.json":       `{"mcpServers": {"tmux": ` + entry("@BIN", nil, map[string]string{sock: "@SOCK"}) + `}}`,
				".gemini/trustedFolders.json": `{"@HOME/proj/sub": "TRUST_PARENT"}`,
			},
			check: "client Gemini CLI", status: statusOK},
		{name: "gemini distrusts a subfolder",
			files: map[string]string{
				".gemini/settings.json":       `{"mcpServers": {"tmux": ` + entry("@BIN", nil, map[string]string{sock: "@SOCK"}) + `}}`,
				".gemini/trustedFolders.json": `{"@HOME": "TRUST_FOLDER", "@HOME/proj": "DO_NOT_TRUST"}`,
			},
			check: "client Gemini CLI", status: statusWarn, want: []string{"is not trusted"}},
		{name: "gemini folder trust off",
			files: map[string]string{".gemini/settings.json": `{"security": {"folderTrust": {"enabled": false}},
				"mcpServers": {"tmux": ` + entry("@BIN", nil, map[string]string{sock: "@SOCK"}) + `}}`},
			check: "client Gemini CLI", status: statusOK},
		{name: "codex",
			files: map[string]string{".codex/config.toml": "model = \"x\"\n[mcp_servers.tmux]\ncommand = \"@BIN\"\nargs = [\n  \"--toolsets\",\n  'io,wait', # comment\n]\n[mcp_servers.tmux.env]\nLIBTMUX_SOCKET = \"@SOCK\"\n"},
			check: "client Codex (~/.codex/config.toml) \"tmux\"", status: statusOK, want: []string{"env LIBTMUX_SOCKET"}},
		// TOML the hand-written reader refused (multi-line strings, dates,
		// arrays of tables) in the parts of the file that are not ours.
		{name: "codex full toml",
			files: map[string]string{".codex/config.toml": "instructions = \"\"\"\nline one\nline two\n\"\"\"\nwhen = 2026-11-27T10:00:00Z\n[[profiles]]\nname = \"p\"\n[mcp_servers.tmux]\ncommand = \"@BIN\"\nenv = { LIBTMUX_SOCKET = \"@SOCK\" }\n"},
			check: "client Codex (~/.codex/config.toml) \"tmux\"", status: statusOK, want: []string{"env LIBTMUX_SOCKET"}},
		{name: "codex home elsewhere",
			env:   map[string]string{"CODEX_HOME": "@HOME/cx"},
			files: map[string]string{"cx/config.toml": "[mcp_servers.tmux]\ncommand = \"/nope/fleetmux\"\nenv = { \"LIBTMUX_SOCKET\" = \"@SOCK\" }\n"},
			check: "client Codex (~/cx/config.toml)", status: statusFail, want: []string{"/nope/fleetmux does not exist"}, code: 1},
		{name: "codex bad toml",
			files: map[string]string{".codex/config.toml": "[mcp_servers.tmux\ncommand = 1\n"},
			check: "client Codex", status: statusFail, want: []string{"cannot be read", "toml: line 2"}, code: 1},
		{name: "desktop args and env that stop fleetmux",
			files: map[string]string{".config/Claude/claude_desktop_config.json": `{"mcpServers": {"tmux": ` +
				entry("@BIN", []string{"--toolsets", "bogus"}, map[string]string{sock: "@SOCK", "LIBTMUX_SUPPRESS_HISTORY": "yes", "LIBTMUX_SAFETY": "max"}) + `}}`},
			check: "client Claude Desktop", status: statusFail,
			want: []string{`unknown toolset "bogus"`, "LIBTMUX_SUPPRESS_HISTORY must be 0 or 1", `LIBTMUX_SAFETY="max" is not a tier`}, code: 1},
		{name: "desktop unknown flag",
			files: map[string]string{".config/Claude/claude_desktop_config.json": `{"mcpServers": {"tmux": ` + entry("@BIN", []string{"--nope"}, map[string]string{sock: "@SOCK"}) + `}}`},
			check: "client Claude Desktop", status: statusFail, want: []string{"flag provided but not defined: -nope"}, code: 1},
		{name: "not JSON",
			files: map[string]string{".config/Claude/claude_desktop_config.json": `{"mcpServers": `},
			check: "client Claude Desktop", status: statusFail, want: []string{"cannot be read"}, code: 1},
		{name: "fleet mode without the agent",
			env:   map[string]string{"SSH_AUTH_SOCK": "/run/agent.sock"},
			files: map[string]string{".claude.json": `{"mcpServers": {"fleet": ` + entry("@BIN", []string{"--hosts", "dev-*"}, map[string]string{sock: "@SOCK"}) + `}}`},
			check: "client Claude Code", status: statusWarn, want: []string{"fleet mode without SSH_AUTH_SOCK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, state := doctorHome(t)
			sockName := os.Getenv(sock)
			subst := strings.NewReplacer("@BIN", binPath, "@SOCK", sockName, "@HOME", home)
			for k, v := range tc.env {
				t.Setenv(k, subst.Replace(v))
			}
			for p, text := range tc.files {
				writeFile(t, filepath.Join(home, p), subst.Replace(text))
			}
			code, r := runDoctorJSON(t, "--state", state)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %+v", code, tc.code, r.Checks)
			}
			found := r.find(subst.Replace(tc.check))
			if len(found) != 1 {
				t.Fatalf("%d checks named %q in %+v", len(found), tc.check, r.Checks)
			}
			c := found[0]
			if c.Status != tc.status {
				t.Errorf("status %s, want %s: %+v", c.Status, tc.status, c)
			}
			for _, w := range tc.want {
				if !strings.Contains(c.Detail, subst.Replace(w)) {
					t.Errorf("detail %q lacks %q", c.Detail, subst.Replace(w))
				}
			}
			if !strings.Contains(c.Fix, subst.Replace(tc.fix)) || (c.Status != statusOK) != (c.Fix != "") {
				t.Errorf("fix %q, want one containing %q (and a fix exactly when not OK)", c.Fix, subst.Replace(tc.fix))
			}
		})
	}
}

func TestDoctorStateFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, path string)
		status string
		want   string
	}{
		{"missing", func(*testing.T, string) {}, statusOK, "not created yet"},
		{"good", func(t *testing.T, p string) {
			if _, err := store.Open(p, store.Options{}); err != nil {
				t.Fatal(err)
			}
		}, statusOK, "mode 0600"},
		{"readable by others", func(t *testing.T, p string) {
			if _, err := store.Open(p, store.Options{}); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, 0o644)
		}, statusWarn, "readable by others"},
		{"corrupt", func(t *testing.T, p string) { writeFile(t, p, strings.Repeat("not a database ", 400)) }, statusFail, "corrupt"},
		{"foreign", func(t *testing.T, p string) {
			db, err := bolt.Open(p, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err })
			db.Close()
		}, statusFail, "not written by fleetmux"},
		{"a directory", func(t *testing.T, p string) { os.MkdirAll(p, 0o700) }, statusFail, "is a directory"},
		{"locked", func(t *testing.T, p string) {
			if _, err := store.Open(p, store.Options{}); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(p, 0o600, nil) // holds the exclusive lock
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			old := doctor.LockTimeout
			doctor.LockTimeout = 200 * time.Millisecond
			t.Cleanup(func() { doctor.LockTimeout = old })
		}, statusWarn, "locked by another process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, state := doctorHome(t)
			os.MkdirAll(filepath.Dir(state), 0o700)
			tc.setup(t, state)
			var before []byte
			if fi, err := os.Stat(state); err == nil && fi.Mode().IsRegular() {
				before, _ = os.ReadFile(state)
			}
			_, r := runDoctorJSON(t, "--state", state)
			c := r.find("state file")
			if len(c) != 1 || c[0].Status != tc.status || !strings.Contains(c[0].Detail, tc.want) || (c[0].Status != statusOK) != (c[0].Fix != "") {
				t.Fatalf("state file check %+v, want %s with %q", c, tc.status, tc.want)
			}
			if before != nil {
				if after, _ := os.ReadFile(state); !reflect.DeepEqual(before, after) {
					t.Errorf("doctor changed the state file")
				}
			}
		})
	}
}

func TestDoctorTmuxAndUsage(t *testing.T) {
	tmuxPath, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		status string
		want   string
	}{
		{"on PATH", nil, statusOK, tmuxPath + ", tmux "},
		{"LIBTMUX_TMUX_BIN", map[string]string{"LIBTMUX_TMUX_BIN": tmuxPath, "PATH": t.TempDir()}, statusOK, "(LIBTMUX_TMUX_BIN)"},
		{"bad LIBTMUX_TMUX_BIN", map[string]string{"LIBTMUX_TMUX_BIN": "/nope/tmux"}, statusFail, "LIBTMUX_TMUX_BIN=/nope/tmux: not an executable file"},
		{"not on PATH", map[string]string{"PATH": t.TempDir()}, statusFail, "tmux not found on PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, state := doctorHome(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, r := runDoctorJSON(t, "--state", state)
			c := r.find("tmux")
			if len(c) == 0 || c[0].Check != "tmux" || c[0].Status != tc.status || !strings.Contains(c[0].Detail, tc.want) {
				t.Fatalf("tmux check %+v, want %s with %q", c, tc.status, tc.want)
			}
			if (tc.status == statusFail) != (code == 1) {
				t.Errorf("exit %d", code)
			}
		})
	}
	// Usage: help on stdout, bad flags and arguments exit 2.
	doctorHome(t)
	if code, out, _ := runCLI(t, "doctor", "--help"); code != 0 || !strings.Contains(out, "Usage: fleetmux doctor") {
		t.Errorf("--help: %d %q", code, out)
	}
	for _, args := range [][]string{{"--nope"}, {"extra"}, {"--hosts", "!x"}} {
		if code, _, errOut := runCLI(t, append([]string{"doctor"}, args...)...); code != 2 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("doctor %v: exit %d, stderr %q", args, code, errOut)
		}
	}
	// The text form: one line per check, then the tally.
	_, state := doctorHome(t)
	code, out, _ := runCLI(t, "doctor", "--state", state)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || !strings.HasPrefix(lines[0], "OK    tmux: ") || !strings.HasSuffix(lines[len(lines)-1], "0 failed, 1 warning.") {
		t.Errorf("text output (exit %d):\n%s", code, out)
	}
}
