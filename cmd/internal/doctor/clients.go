package doctor

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/fleetmux/fleetmux/mcp"
)

// ConfigPlaceholder is the command of the shipped client configs
// (configs/*.json, *.toml), which the user replaces with the absolute path
// of the binary.
const ConfigPlaceholder = "/ABSOLUTE/PATH/TO/fleetmux"

// clientFile is one MCP client configuration file.
type clientFile struct {
	client string // "Claude Code", ...
	path   string
	// read returns the servers the file registers.
	read func(data []byte) ([]clientEntry, error)
}

// clientEntry is one MCP server entry of a client file.
type clientEntry struct {
	Name    string
	Scope   string // "" or e.g. "user scope", "project /src/x"
	Command string
	Args    []string
	Env     map[string]string
	// URL is the address of a server the client reaches over HTTP (no
	// command), with the headers it sends.
	URL     string
	Headers map[string]string
	// BearerEnv names the variable holding the bearer token (Codex's
	// bearer_token_env_var).
	BearerEnv string

	probe *httpProbe // what the URL answered, for fleetmux entries
}

// clientFiles lists the configuration files doctor looks for, under the
// home directory and in the working directory.
func clientFiles(env doctorEnv) []clientFile {
	desktop := filepath.Join(env.home, ".config", "Claude", "claude_desktop_config.json")
	if runtime.GOOS == "darwin" {
		desktop = filepath.Join(env.home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
	}
	codexHome := env.getenv("CODEX_HOME")
	if codexHome == "" {
		codexHome = filepath.Join(env.home, ".codex")
	}
	files := []clientFile{
		{"Claude Code", filepath.Join(env.home, ".claude.json"), readClaudeCode},
		{"Claude Code", filepath.Join(env.cwd, ".mcp.json"), readMCPServersAs("project scope")},
		{"Claude Desktop", desktop, readMCPServersAs("")},
		{"Cursor", filepath.Join(env.home, ".cursor", "mcp.json"), readMCPServersAs("")},
		{"Cursor", filepath.Join(env.cwd, ".cursor", "mcp.json"), readMCPServersAs("project")},
		{"Gemini CLI", filepath.Join(env.home, ".gemini", "settings.json"), readGemini},
		{"Gemini CLI", filepath.Join(env.cwd, ".gemini", "settings.json"), readGemini},
		{"Codex", filepath.Join(codexHome, "config.toml"), readCodex},
	}
	// The working directory may be the home directory.
	seen := map[string]bool{}
	out := files[:0]
	for _, f := range files {
		if f.path == "" || seen[f.path] {
			continue
		}
		seen[f.path] = true
		out = append(out, f)
	}
	return out
}

// jsonServers decodes an "mcpServers" object.
func jsonServers(raw map[string]json.RawMessage, scope string) ([]clientEntry, error) {
	var out []clientEntry
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var e struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`       // Claude Code, Cursor, Gemini CLI (SSE)
			HTTPURL string            `json:"httpUrl"`   // Gemini CLI
			Server  string            `json:"serverUrl"` // Windsurf
			Headers map[string]string `json:"headers"`
		}
		if err := json.Unmarshal(raw[name], &e); err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		out = append(out, clientEntry{Name: name, Scope: scope, Command: e.Command, Args: e.Args, Env: e.Env,
			URL: orText(e.HTTPURL, orText(e.URL, e.Server)), Headers: e.Headers})
	}
	return out, nil
}

func readMCPServersAs(scope string) func([]byte) ([]clientEntry, error) {
	return func(data []byte) ([]clientEntry, error) {
		var doc struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, err
		}
		return jsonServers(doc.MCPServers, scope)
	}
}

// readClaudeCode reads ~/.claude.json: the user scope's mcpServers, and
// each project's (the local scope, one directory only).
func readClaudeCode(data []byte) ([]clientEntry, error) {
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		Projects   map[string]struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	out, err := jsonServers(doc.MCPServers, "user scope")
	if err != nil {
		return nil, err
	}
	dirs := make([]string, 0, len(doc.Projects))
	for dir := range doc.Projects {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		more, err := jsonServers(doc.Projects[dir].MCPServers, "local scope, "+dir+" only")
		if err != nil {
			return nil, fmt.Errorf("project %s: %w", dir, err)
		}
		out = append(out, more...)
	}
	return out, nil
}

// readGemini reads Gemini CLI's settings.json, which may hold comments.
func readGemini(data []byte) ([]clientEntry, error) {
	return readMCPServersAs("")(stripJSONComments(data))
}

// stripJSONComments blanks // and /* */ comments outside strings.
func stripJSONComments(data []byte) []byte {
	out := append([]byte(nil), data...)
	inStr := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := strings.Index(string(out[i+2:]), "*/")
			stop := len(out)
			if end >= 0 {
				stop = i + 2 + end + 2
			}
			for j := i; j < stop; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i = stop - 1
		}
	}
	return out
}

// codexServer is one [mcp_servers.NAME] table of Codex's config.toml.
type codexServer struct {
	Command   string            `toml:"command"`
	Args      []string          `toml:"args"`
	Env       map[string]string `toml:"env"`
	URL       string            `toml:"url"`
	BearerEnv string            `toml:"bearer_token_env_var"`
	Headers   map[string]string `toml:"http_headers"`
}

// readCodex reads the [mcp_servers.NAME] tables of Codex's config.toml
// (with a TOML library: the rest of the file may use any of TOML).
func readCodex(data []byte) ([]clientEntry, error) {
	var doc struct {
		Servers map[string]codexServer `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(doc.Servers))
	for name := range doc.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []clientEntry
	for _, name := range names {
		t := doc.Servers[name]
		e := clientEntry{Name: name, Env: map[string]string{}, Command: t.Command, URL: t.URL, BearerEnv: t.BearerEnv, Headers: t.Headers, Args: t.Args}
		for k, v := range t.Env {
			e.Env[k] = v
		}
		out = append(out, e)
	}
	return out, nil
}

// carriedEnv are the variables a user sets in their shell that change
// what fleetmux does, with the flag that can say the same in args.
var carriedEnv = []struct{ name, flag string }{
	{"LIBTMUX_SOCKET", ""},
	{"LIBTMUX_SOCKET_PATH", ""},
	{"LIBTMUX_TMUX_BIN", ""},
	{"LIBTMUX_SAFETY", "--read-only"},
	{"LIBTMUX_SUPPRESS_HISTORY", ""},
	{"LIBTMUX_MCP_WAIT_MAX_SECONDS", ""},
	{"TMUX_TMPDIR", ""}, // where tmux puts its sockets: another server without it
	{"FLEETMUX_HOSTS", "--hosts"},
	{"FLEETMUX_SSH_CONFIG", "--ssh-config"},
	{"FLEETMUX_STATE", "--state"},
	{"FLEETMUX_TOOLSETS", "--toolsets"},
}

// checkClients reports every fleetmux entry of the client files found.
func checkClients(env doctorEnv) []Check {
	self, _ := os.Executable()
	if p, err := filepath.EvalSymlinks(self); err == nil {
		self = p
	}
	var checks []Check
	found := 0
	for _, f := range clientFiles(env) {
		data, err := os.ReadFile(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		found++
		name := "client " + f.client + " (" + tildePath(f.path, env.home) + ")"
		if err != nil {
			checks = append(checks, Check{Check: name, Status: StatusFail, Detail: err.Error(), Fix: "make the file readable"})
			continue
		}
		entries, err := f.read(data)
		if err != nil {
			checks = append(checks, Check{Check: name, Status: StatusFail, Detail: "cannot be read: " + err.Error(),
				Fix: "fix its syntax: the client cannot read it either"})
			continue
		}
		var ours []clientEntry
		userScope := false
		taken := map[string]bool{}
		for _, e := range entries {
			taken[e.Name] = true
			switch {
			case e.Command == "" && e.URL != "":
				if p, ok := fleetmuxHTTP(env, e); ok {
					e.probe = p
					ours = append(ours, e)
					userScope = userScope || e.Scope == "user scope"
				}
			case isFleetmuxCommand(e.Command):
				ours = append(ours, e)
				userScope = userScope || e.Scope == "user scope"
			}
		}
		if len(ours) == 0 {
			// The name fleetmux may be taken by another server.
			entryName := "fleetmux"
			for i := 2; taken[entryName]; i++ {
				entryName = fmt.Sprintf("fleetmux-%d", i)
			}
			fix := "add the entry of configs/" + configFileFor(f.client) + " with the absolute path " + orText(self, "of fleetmux")
			if entryName != "fleetmux" {
				fix += ", under a name of its own (" + entryName + ": the name fleetmux is taken)"
			}
			if f.client == "Claude Code" {
				fix = "claude mcp add --scope user " + entryName + " -- " + orText(self, "/absolute/path/to/fleetmux")
			}
			checks = append(checks, Check{Check: name, Status: StatusWarn, Detail: "fleetmux is not registered here", Fix: fix})
			continue
		}
		for _, e := range ours {
			if e.probe != nil {
				checks = append(checks, checkHTTPEntry(env, f, name, e, userScope))
				continue
			}
			checks = append(checks, checkClientEntry(env, f, name, e, self, userScope))
		}
	}
	if found == 0 {
		checks = append(checks, Check{Check: "clients", Status: StatusWarn,
			Detail: "no MCP client configuration found (Claude Code, Claude Desktop, Cursor, Gemini CLI, Codex)",
			Fix:    "register fleetmux with your client: see configs/README.md"})
	}
	return checks
}

func configFileFor(client string) string {
	switch client {
	case "Claude Desktop":
		return "claude-desktop.json"
	case "Cursor":
		return "cursor-mcp.json"
	case "Gemini CLI":
		return "gemini-settings.json"
	case "Codex":
		return "codex-config.toml"
	}
	return "claude-code.sh"
}

// isFleetmuxCommand reports whether an entry's command starts fleetmux.
func isFleetmuxCommand(cmd string) bool {
	return cmd == ConfigPlaceholder || filepath.Base(cmd) == "fleetmux"
}

func tildePath(p, home string) string {
	if home != "" && home != "/" {
		if rel, ok := strings.CutPrefix(p, home+string(filepath.Separator)); ok {
			return "~/" + rel
		}
	}
	return p
}

// entryCheck gathers the check of one client entry: what the entry is
// (notes), what is wrong with it (probs) and how to fix that; the worst
// status wins.
type entryCheck struct {
	res                 Check
	notes, probs, fixes []string
}

func newEntryCheck(name string, e clientEntry) *entryCheck {
	c := &entryCheck{res: Check{Check: fmt.Sprintf("%s %q", name, e.Name), Status: StatusOK}}
	if e.Scope != "" {
		c.res.Check = fmt.Sprintf("%s %q [%s]", name, e.Name, e.Scope)
	}
	return c
}

func (c *entryCheck) problem(status, note, fix string) {
	if status == StatusFail || c.res.Status == StatusOK {
		c.res.Status = status
	}
	c.probs = append(c.probs, note)
	if fix != "" {
		c.fixes = append(c.fixes, fix)
	}
}

func (c *entryCheck) done() Check {
	c.res.Detail = strings.Join(append(c.notes, c.probs...), "; ")
	c.res.Fix = strings.Join(c.fixes, "; ")
	return c.res
}

// checkClientEntry checks one fleetmux entry: command, arguments,
// environment (and, for Gemini CLI, the trust of the working directory).
func checkClientEntry(env doctorEnv, f clientFile, name string, e clientEntry, self string, userScope bool) Check {
	c := newEntryCheck(name, e)
	abs := orText(self, "/absolute/path/to/fleetmux")

	// The command.
	switch {
	case e.Command == ConfigPlaceholder:
		c.problem(StatusFail, "the command is still the placeholder "+ConfigPlaceholder, "replace it with "+abs)
	case !filepath.IsAbs(e.Command):
		if p, err := exec.LookPath(e.Command); err == nil {
			c.problem(StatusWarn, fmt.Sprintf("the command %q is found on your PATH (%s) but a client started outside your shell may not have that PATH", e.Command, p), "use the absolute path "+p)
		} else {
			c.problem(StatusFail, fmt.Sprintf("the command %q is not on PATH", e.Command), "use the absolute path "+abs)
		}
	default:
		fi, err := os.Stat(e.Command)
		switch {
		case err != nil:
			c.problem(StatusFail, e.Command+" does not exist", "reinstall (go install ./cmd/fleetmux) or use the absolute path "+abs)
		case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
			c.problem(StatusFail, e.Command+" is not an executable file", "use the absolute path "+abs)
		default:
			out, _, err := runQuiet(context.Background(), e.Command, "--version")
			if v := strings.TrimSpace(out); err == nil && strings.HasPrefix(v, "fleetmux ") {
				c.notes = append(c.notes, e.Command+" ("+strings.Fields(v)[1]+")")
			} else {
				c.problem(StatusFail, e.Command+" --version does not print a fleetmux version", "use the absolute path "+abs)
			}
		}
	}

	// The arguments, as serving would parse them.
	fleetMode := e.Env["FLEETMUX_HOSTS"] != ""
	if len(e.Args) > 0 && env.opts.Subcommand(e.Args[0]) {
		c.notes = append(c.notes, "runs fleetmux "+e.Args[0])
	} else if len(e.Args) > 0 {
		hosts, extra, err := env.opts.ServeArgs(e.Args, e.Env)
		if err != nil {
			c.problem(StatusFail, "fleetmux would not start with args "+strings.Join(e.Args, " ")+": "+err.Error(), "fix the args (fleetmux --help lists the flags)")
		} else if extra != "" {
			c.problem(StatusFail, fmt.Sprintf("fleetmux would not start: unknown command %q in args", extra), "fix the args (fleetmux --help lists the commands)")
		}
		fleetMode = fleetMode || hosts
	}

	// The environment, as fleetmux reads it at start-up.
	if v, ok := e.Env["LIBTMUX_SUPPRESS_HISTORY"]; ok && v != "0" && v != "1" {
		c.problem(StatusFail, "env LIBTMUX_SUPPRESS_HISTORY must be 0 or 1: fleetmux refuses to start", "set it to 0 or 1, or remove it")
	}
	if v, ok := e.Env["LIBTMUX_SAFETY"]; ok {
		if _, valid := mcp.ParseTier(v); !valid {
			c.problem(StatusWarn, fmt.Sprintf("env LIBTMUX_SAFETY=%q is not a tier: fleetmux falls back to readonly", v), "set it to readonly, mutating or destructive")
		}
	}
	if v, ok := e.Env["FLEETMUX_TOOLSETS"]; ok {
		if _, err := mcp.ParseToolsets(v); err != nil {
			c.problem(StatusFail, "env FLEETMUX_TOOLSETS: "+err.Error(), "fix FLEETMUX_TOOLSETS")
		}
	}
	var missing, pairs []string
	for _, v := range carriedEnv {
		here := env.getenv(v.name)
		if here == "" {
			continue
		}
		if _, ok := e.Env[v.name]; ok || v.flag != "" && slices.ContainsFunc(e.Args, func(a string) bool { return a == v.flag || strings.HasPrefix(a, v.flag+"=") }) {
			continue
		}
		missing = append(missing, v.name)
		pairs = append(pairs, v.name+"="+here)
	}
	if len(missing) > 0 {
		c.problem(StatusWarn, strings.Join(missing, ", ")+" set in your environment but not in the entry's env: MCP clients start servers with a minimal environment, so fleetmux may run without it",
			"add "+strings.Join(pairs, " ")+" to the entry's env (or unset it here if the entry is right)")
	}
	if sock := env.getenv("SSH_AUTH_SOCK"); fleetMode && sock != "" && e.Env["SSH_AUTH_SOCK"] == "" {
		c.problem(StatusWarn, "fleet mode without SSH_AUTH_SOCK in the entry's env: your ssh-agent may not reach fleetmux (only IdentityFile keys are then used)",
			"add SSH_AUTH_SOCK with a path that stays the same across logins to the entry's env")
	}
	if len(e.Env) > 0 {
		keys := make([]string, 0, len(e.Env))
		for k := range e.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		c.notes = append(c.notes, "env "+strings.Join(keys, ","))
	}

	checkWhere(env, f, e, userScope, "-- "+orText(e.Command, abs), c.problem)
	return c.done()
}

// geminiTrusts reports whether Gemini CLI trusts the working directory,
// which it needs to start MCP servers: folder trust switched off in the
// user settings, GEMINI_CLI_TRUST_WORKSPACE=true, or a rule of
// trustedFolders.json (TRUST_FOLDER for the folder and below,
// TRUST_PARENT for its parent and below, DO_NOT_TRUST; the longest rule
// wins).
func geminiTrusts(env doctorEnv) (bool, string) {
	if env.getenv("GEMINI_CLI_TRUST_WORKSPACE") == "true" {
		return true, ""
	}
	if data, err := os.ReadFile(filepath.Join(env.home, ".gemini", "settings.json")); err == nil {
		var s struct {
			Security struct {
				FolderTrust struct {
					Enabled *bool `json:"enabled"`
				} `json:"folderTrust"`
			} `json:"security"`
		}
		if json.Unmarshal(stripJSONComments(data), &s) == nil && s.Security.FolderTrust.Enabled != nil && !*s.Security.FolderTrust.Enabled {
			return true, ""
		}
	}
	path := env.getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
	if path == "" {
		path = filepath.Join(env.home, ".gemini", "trustedFolders.json")
	}
	untrusted := "Gemini CLI disables MCP servers in folders it does not trust, and " + env.cwd + " is not trusted"
	data, err := os.ReadFile(path)
	if err != nil {
		return false, untrusted
	}
	var rules map[string]string
	if err := json.Unmarshal(stripJSONComments(data), &rules); err != nil {
		return false, untrusted + " (" + tildePath(path, env.home) + " cannot be read: " + err.Error() + ")"
	}
	best, level := -1, ""
	for p, l := range rules {
		dir := filepath.Clean(p)
		if l == "TRUST_PARENT" {
			dir = filepath.Dir(dir)
		}
		if (env.cwd == dir || strings.HasPrefix(env.cwd, strings.TrimSuffix(dir, "/")+"/")) && len(dir) > best {
			best, level = len(dir), l
		}
	}
	if level == "TRUST_FOLDER" || level == "TRUST_PARENT" {
		return true, ""
	}
	return false, untrusted
}

// checkWhere reports where an entry does not apply: one directory only
// (Claude Code's local scope), an untrusted folder (Gemini CLI). how is
// the rest of the `claude mcp add --scope user NAME` command that
// registers the entry for the user.
func checkWhere(env doctorEnv, f clientFile, e clientEntry, userScope bool, how string, problem func(status, note, fix string)) {
	if strings.HasPrefix(e.Scope, "local scope") && !userScope {
		problem(StatusWarn, "registered for one directory only: claude mcp list elsewhere does not show it",
			"claude mcp add --scope user "+e.Name+" "+how)
	}
	if f.client == "Gemini CLI" {
		if trusted, why := geminiTrusts(env); !trusted {
			problem(StatusWarn, why, "trust the folder when Gemini CLI asks, or add {\""+env.cwd+"\": \"TRUST_FOLDER\"} to ~/.gemini/trustedFolders.json")
		}
	}
}

// entryHeaders are the headers the client sends to an HTTP entry's URL.
func entryHeaders(env doctorEnv, e clientEntry) map[string]string {
	h := map[string]string{}
	for k, v := range e.Headers {
		h[k] = v
	}
	if e.BearerEnv != "" {
		if tok := env.getenv(e.BearerEnv); tok != "" {
			h["Authorization"] = "Bearer " + tok
		}
	}
	return h
}

// bearerToken is the token of an Authorization: Bearer header.
func bearerToken(h map[string]string) string {
	for k, v := range h {
		if strings.EqualFold(k, "Authorization") {
			if scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " "); ok && strings.EqualFold(scheme, "Bearer") {
				return strings.TrimSpace(tok)
			}
		}
	}
	return ""
}

// fleetmuxHTTP reports whether an HTTP entry registers a fleetmux serve
// --http: its name says fleetmux, it sends the token of fleetmux's token
// file, or its URL, on this machine, answers as fleetmux. The entry's
// headers go only to the URL the client sends them to, and to one
// elsewhere only when the entry is fleetmux's by name or token.
func fleetmuxHTTP(env doctorEnv, e clientEntry) (*httpProbe, bool) {
	headers := entryHeaders(env, e)
	mine := strings.Contains(strings.ToLower(e.Name), mcp.ProductName)
	if tok := bearerToken(headers); tok != "" && !mine {
		if want, err := readTokenFile(env); err == nil && subtle.ConstantTimeCompare([]byte(tok), []byte(want)) == 1 {
			mine = true
		}
	}
	if !mine && !loopbackURL(e.URL) {
		return nil, false
	}
	p := probeMCP(context.Background(), e.URL, headers, env.opts.Version)
	if !mine && !p.Fleetmux {
		return nil, false
	}
	return &p, true
}

// doctorTokenPath is the token file of a fleetmux serve --http started
// with the state file doctor checks.
func doctorTokenPath(env doctorEnv) string {
	p, err := env.opts.TokenPath(env.state)
	if err != nil {
		return "~/.local/state/fleetmux/http-token"
	}
	return p
}

// readTokenFile reads the default token file (bounded; it holds one word).
func readTokenFile(env doctorEnv) (string, error) {
	f, err := os.Open(doctorTokenPath(env))
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	return strings.TrimSpace(string(data)), err
}

// checkHTTPEntry checks an entry that reaches fleetmux serve --http: does
// a fleetmux answer at its URL, and does it take the entry's token.
func checkHTTPEntry(env doctorEnv, f clientFile, name string, e clientEntry, userScope bool) Check {
	c := newEntryCheck(name, e)
	note := "over HTTP at " + e.URL
	addr := e.URL
	if u, err := url.Parse(e.URL); err == nil && u.Host != "" {
		addr = u.Host
	}
	tokenPath := tildePath(doctorTokenPath(env), env.home)
	p := e.probe
	switch {
	case p.Err != nil && refused(p.Err):
		c.problem(StatusWarn, "nothing answers there: the fleetmux serve --http daemon is not running",
			"start it where it can keep running (a tmux window, a systemd user unit): fleetmux serve --http "+addr)
	case p.Err != nil:
		c.problem(StatusWarn, "no answer: "+p.Err.Error(), "check that fleetmux serve --http "+addr+" runs and is reachable")
	case p.Status == http.StatusUnauthorized && bearerToken(entryHeaders(env, e)) == "":
		c.problem(StatusFail, "the daemon wants a bearer token and the entry sends none",
			"add the header Authorization: Bearer TOKEN with the token of "+tokenPath+" (fleetmux serve's --token-file)")
	case p.Status == http.StatusUnauthorized:
		c.problem(StatusFail, "the daemon refuses the entry's bearer token",
			"put the token of "+tokenPath+" (fleetmux serve's --token-file) in the entry's Authorization: Bearer header")
	case p.Status == http.StatusForbidden:
		c.problem(StatusFail, "the daemon refuses the request (HTTP 403): the URL's host must be the address fleetmux serve --http listens on, or localhost",
			"use the URL fleetmux serve --http prints at start-up")
	case p.Status != http.StatusOK:
		c.problem(StatusWarn, fmt.Sprintf("it answers MCP's initialize with HTTP %d", p.Status), "check the URL: fleetmux serve --http prints it at start-up")
	case !p.Fleetmux:
		c.problem(StatusWarn, "the server there is "+orText(p.Title, "not fleetmux"), "point the entry at the URL fleetmux serve --http prints")
	default:
		note += ", answered by " + p.Title + " (the daemon's own environment applies, not the client's)"
	}
	how := "--transport http " + e.URL
	if bearerToken(e.Headers) != "" {
		how += " --header \"Authorization: Bearer $(cat " + tokenPath + ")\""
	}
	checkWhere(env, f, e, userScope, how, c.problem)
	c.notes = append(c.notes, note)
	return c.done()
}
