package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// httpDaemon is a `fleetmux serve --http` process started by a test.
type httpDaemon struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedBuf
	exited chan error
}

var serveURL = regexp.MustCompile(`serving MCP over streamable HTTP at (http://\S+)`)

// startHTTPDaemon starts the built binary with `serve --http 127.0.0.1:0`
// and extra args, waits for the URL it prints and stops it (SIGTERM) when
// the test ends.
func startHTTPDaemon(t *testing.T, env []string, args ...string) *httpDaemon {
	t.Helper()
	d := &httpDaemon{stderr: &lockedBuf{}, exited: make(chan error, 1)}
	d.cmd = exec.Command(binPath, append([]string{"serve", "--http", "127.0.0.1:0", "--log-level", "info"}, args...)...)
	d.cmd.Env = append(os.Environ(), append([]string{"TMUX=", "TMUX_PANE=", "FLEETMUX_HOSTS="}, env...)...)
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() { d.stop(t) })
	deadline := time.After(30 * time.Second)
	for {
		if m := serveURL.FindStringSubmatch(d.stderr.String()); m != nil {
			d.url = m[1]
			return d
		}
		select {
		case err := <-d.exited:
			d.exited <- err
			t.Fatalf("serve exited before serving: %v\n%s", err, d.stderr.String())
		case <-deadline:
			t.Fatalf("serve printed no URL:\n%s", d.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and returns the exit error (nil for status 0).
func (d *httpDaemon) stop(t *testing.T) error {
	t.Helper()
	if d.cmd.ProcessState != nil {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		return err
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		t.Errorf("serve did not stop on SIGTERM:\n%s", d.stderr.String())
		return <-d.exited
	}
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connectHTTP connects an SDK client named name with the token. revision
// "" lets the SDK negotiate (it asks for the newest, 2026-07-28, first);
// an older revision makes it initialize a session of that revision.
func connectHTTP(ctx context.Context, t *testing.T, url, token, name, revision string) *sdk.ClientSession {
	t.Helper()
	cs, err := dialHTTP(ctx, url, token, name, revision)
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func dialHTTP(ctx context.Context, url, token, name, revision string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, nil)
	var rt http.RoundTripper = http.DefaultTransport
	if token != "" {
		rt = bearer{token, rt}
	}
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}}
	return c.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: revision})
}

// TestServeHTTPTwoAgents: two SDK clients share one daemon: both list the
// tools, one creates a tmux session and the other sees it, and their
// audit records carry their own MCP session ids. The token file is
// created with mode 0600 and SIGTERM ends the daemon with status 0.
func TestServeHTTPTwoAgents(t *testing.T) {
	sock := fmt.Sprintf("fleetmux-test-http-%d", os.Getpid())
	if out, err := tmuxtest.Command("-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "base", "/bin/sh").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	defer tmuxtest.Command("-L", sock, "kill-server").Run()
	dir := t.TempDir()
	state := filepath.Join(dir, "state", "state.db")
	d := startHTTPDaemon(t, []string{"LIBTMUX_SOCKET=" + sock}, "--state", state)

	tokenPath := filepath.Join(dir, "state", "http-token")
	fi, err := os.Stat(tokenPath)
	if err != nil {
		t.Fatalf("token file not next to the state file: %v\n%s", err, d.stderr.String())
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(tokenPath)
	token := strings.TrimSpace(string(raw))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
		t.Errorf("token is not 32 random bytes in hex: %d characters", len(token))
	}
	if !strings.Contains(d.stderr.String(), tokenPath) {
		t.Errorf("start-up does not say where the token is:\n%s", d.stderr.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Sessions are of the revisions before 2026-07-28 (which has none).
	a := connectHTTP(ctx, t, d.url, token, "agent-a", "2025-11-25")
	b := connectHTTP(ctx, t, d.url, token, "agent-b", "2025-06-18")
	if a.ID() == "" || b.ID() == "" || a.ID() == b.ID() {
		t.Fatalf("MCP session ids %q and %q: want two different ones", a.ID(), b.ID())
	}
	var counts []int
	for _, cs := range []*sdk.ClientSession{a, b} {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, len(res.Tools))
	}
	if counts[0] == 0 || counts[0] != counts[1] {
		t.Errorf("tools/list counts %v", counts)
	}
	res, err := a.CallTool(ctx, &sdk.CallToolParams{Name: "create_session", Arguments: map[string]any{"session_name": "made-by-a"}})
	if err != nil || res.IsError {
		t.Fatalf("create_session: %v %s", err, resultText(res))
	}
	res, err = b.CallTool(ctx, &sdk.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_sessions: %v %s", err, resultText(res))
	}
	if got, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(got), `"session_name":"made-by-a"`) {
		t.Errorf("agent b does not see agent a's session: %s", got)
	}

	out, err := exec.Command(binPath, "audit", "--state", state, "--json", "--limit", "0").Output()
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	bySession := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var rec struct {
			Tool         string `json:"tool"`
			Client       string `json:"client"`
			MCPSessionID string `json:"mcp_session_id"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		bySession[rec.Client+"/"+rec.Tool] = rec.MCPSessionID
	}
	if bySession["agent-a/create_session"] != a.ID() || bySession["agent-b/list_sessions"] != b.ID() {
		t.Errorf("audit session ids %v, want agent-a %s and agent-b %s", bySession, a.ID(), b.ID())
	}
	out, err = exec.Command(binPath, "audit", "--state", state, "--json", "--session", b.ID()).Output()
	if err != nil || strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), `"list_sessions"`) {
		t.Errorf("audit --session %s: %v %s", b.ID(), err, out)
	}

	a.Close()
	b.Close()
	if err := d.stop(t); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, d.stderr.String())
	}
	if s := d.stderr.String(); strings.Contains(s, "level=ERROR") || strings.Contains(s, token) {
		t.Errorf("stderr has an ERROR or the token:\n%s", s)
	}
}

// TestServeHTTPRefusals: a request without the token or with a wrong one
// gets 401 with WWW-Authenticate: Bearer; a foreign Host or Origin gets
// 403 even with the token; nothing echoes the token.
func TestServeHTTPRefusals(t *testing.T) {
	dir := t.TempDir()
	tokenPath := filepath.Join(dir, "tok")
	const token = "fmtest-tok-0123456789abcdef"
	if err := os.WriteFile(tokenPath, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startHTTPDaemon(t, []string{"LIBTMUX_SOCKET=fleetmux-test-http-none"}, "--no-audit", "--token-file", tokenPath)
	port := d.url[strings.LastIndex(d.url, ":")+1 : strings.LastIndex(d.url, "/")]
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for _, tt := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, 401},
		{"wrong token", map[string]string{"Authorization": "Bearer wrong-" + token}, 401},
		{"token prefix", map[string]string{"Authorization": "Bearer " + token[:10]}, 401},
		{"not bearer", map[string]string{"Authorization": "Basic " + token}, 401},
		{"token", map[string]string{"Authorization": "Bearer " + token}, 200},
		{"localhost host", map[string]string{"Authorization": "Bearer " + token, "Host": "localhost:" + port}, 200},
		{"LOCALHOST host", map[string]string{"Authorization": "Bearer " + token, "Host": "LOCALHOST:" + port}, 200},
		{"LocalHost host", map[string]string{"Authorization": "Bearer " + token, "Host": "LocalHost:" + port}, 200},
		{"loopback origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://localhost:6274"}, 200},
		{"foreign host", map[string]string{"Authorization": "Bearer " + token, "Host": "evil.example.com:" + port}, 403},
		{"loopback host, other port", map[string]string{"Authorization": "Bearer " + token, "Host": "127.0.0.1:1"}, 403},
		{"foreign host, no token", map[string]string{"Host": "evil.example.com"}, 403},
		{"foreign origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example.com"}, 403},
		{"null origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "null"}, 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", d.url, strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tt.header {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if strings.Contains(string(body), token) {
				t.Errorf("the answer echoes the token: %s", body)
			}
			if tt.want == 401 {
				if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
				}
			}
			if tt.want >= 400 && !json.Valid(body) {
				t.Errorf("error body is not JSON: %s", body)
			}
		})
	}
	if err := d.stop(t); err != nil {
		t.Errorf("exit: %v", err)
	}
	if strings.Contains(d.stderr.String(), token[:10]) {
		t.Errorf("the token reached the log:\n%s", d.stderr.String())
	}
}

// TestServeHTTPNoAuth: --no-auth serves without a token on loopback and
// says so loudly.
func TestServeHTTPNoAuth(t *testing.T) {
	d := startHTTPDaemon(t, []string{"LIBTMUX_SOCKET=fleetmux-test-http-none"}, "--no-audit", "--no-auth")
	if !strings.Contains(d.stderr.String(), "level=WARN") || !strings.Contains(d.stderr.String(), "--no-auth") {
		t.Errorf("--no-auth not logged loudly:\n%s", d.stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "anon", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: d.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// TestServeUsage: refused combinations are usage errors naming the fix;
// nothing is created.
func TestServeUsage(t *testing.T) {
	state := privateEnv(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--http", "0.0.0.0:8765"}, "--allow-remote"},
		{[]string{"serve", "--http", "192.0.2.1:8765"}, "--allow-remote"},
		{[]string{"serve", "--http", ":8765"}, "--allow-remote"},
		{[]string{"serve", "--http", "0.0.0.0:8765", "--allow-remote", "--no-auth"}, "loopback"},
		{[]string{"serve", "--http", "127.0.0.1:8765", "--no-auth", "--token-file", "/tmp/x"}, "exclude"},
		{[]string{"serve", "--token-file", "/tmp/x"}, "--http"},
		{[]string{"serve", "--allow-remote"}, "--http"},
		{[]string{"serve", "--max-sessions", "3"}, "--http"},
		{[]string{"serve", "--http", "127.0.0.1:8765", "--max-sessions", "0"}, "--max-sessions"},
		{[]string{"serve", "--http", "127.0.0.1:8765", "--session-idle", "0s"}, "--session-idle"},
		{[]string{"serve", "--http", "8765"}, "HOST:PORT"},
		{[]string{"serve", "--http", "127.0.0.1:99999"}, "port"},
		{[]string{"serve", "extra"}, "unexpected"},
	} {
		code, out, errOut := runCLI(t, tt.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", tt.args, code, out, errOut, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Dir(state)); !os.IsNotExist(err) {
		t.Errorf("a usage error created the state directory: %v", err)
	}
}

func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "http-token")
	tok, created, err := loadOrCreateToken(path)
	if err != nil || !created || len(tok) != 64 {
		t.Fatalf("create: %q %v %v", tok, created, err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %04o (%v)", p, fi.Mode().Perm(), want, err)
		}
	}
	again, created, err := loadOrCreateToken(path)
	if err != nil || created || again != tok {
		t.Fatalf("reload: same=%v created=%v %v", again == tok, created, err)
	}
	for _, tt := range []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
	}{
		{"group readable", tok, 0o640, "chmod 600"},
		{"world readable", tok, 0o604, "chmod 600"},
		{"too short", "short", 0o600, "at least 16"},
		{"two words", "abcdefghijklmnop qrstuvwxyz", 0o600, "one word"},
		{"own token", "  my-own-token-of-some-length\n", 0o600, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if err := os.WriteFile(p, []byte(tt.content), tt.mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, tt.mode)
			got, _, err := loadOrCreateToken(p)
			if tt.want == "" {
				if err != nil || got != strings.TrimSpace(tt.content) {
					t.Fatalf("got %q, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("err %v, want one naming %s and %q", err, p, tt.want)
			}
			if strings.Contains(err.Error(), tok) {
				t.Error("the error shows the token")
			}
		})
	}
	if _, _, err := loadOrCreateToken(dir); err == nil {
		t.Error("a directory was accepted as token file")
	}
}

// TestServeTokenFileUnsafe: `fleetmux serve --http` refuses, at once and
// with a message naming the file, a token file that is a FIFO (it used to
// wait for a writer forever), a symbolic link (to a good token file, or
// dangling: nothing is created through it), or that sits in a directory
// other users can write to.
func TestServeTokenFileUnsafe(t *testing.T) {
	const token = "fmtest-tok-0123456789abcdef"
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	target := filepath.Join(dir, "created-through-link")
	if err := os.Symlink(target, dangling); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	inOpen := filepath.Join(open, "tok")
	if err := os.WriteFile(inOpen, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path, want string
	}{
		{"fifo", fifo, "not a regular file (a FIFO)"},
		{"symlink", link, "symbolic link"},
		{"dangling symlink", dangling, "symbolic link"},
		{"world-writable directory", inOpen, "other users can write to it"},
		{"world-writable directory, new file", filepath.Join(open, "new"), "other users can write to it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binPath, "serve", "--http", "127.0.0.1:0", "--no-audit", "--token-file", tt.path)
			cmd.Env = append(os.Environ(), "TMUX=", "TMUX_PANE=", "FLEETMUX_HOSTS=", "LIBTMUX_SOCKET=fleetmux-test-http-none")
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("serve did not give up on %s (still waiting after 30 s): %s", tt.path, out)
			}
			if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), tt.path) || !strings.Contains(string(out), tt.want) {
				t.Fatalf("exit %v, output %q; want exit 1 and a line naming %s and %q", err, out, tt.path, tt.want)
			}
			if strings.Contains(string(out), "serving MCP") || strings.Contains(string(out), token) {
				t.Fatalf("served, or showed the token: %s", out)
			}
		})
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("a dangling link's target was created")
	}
	// A sticky world-writable directory (like /tmp) is fine: others cannot
	// replace a file of ours there.
	sticky := filepath.Join(dir, "sticky")
	if err := os.Mkdir(sticky, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(sticky, os.ModeSticky|0o777)
	if _, created, err := loadOrCreateToken(filepath.Join(sticky, "tok")); err != nil || !created {
		t.Errorf("sticky directory: created=%v %v", created, err)
	}
}

// rawPost POSTs body to the daemon with the token (and session id when
// given) and returns the status, the body and the Mcp-Session-Id header.
func rawPost(t *testing.T, url, token, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Mcp-Session-Id")
}

// TestServeHTTPLimits: the daemon holds at most --max-sessions MCP
// sessions: a new one closes the least recently used idle session (which
// then answers 404), and is refused with 503 and a JSON-RPC error when
// every session is busy (an open event stream); a POSTed batch over 32
// messages gets 400 and a body over 4 MiB gets 413, each a JSON-RPC
// -32600 error.
func TestServeHTTPLimits(t *testing.T) {
	dir := t.TempDir()
	tokenPath := filepath.Join(dir, "tok")
	const token = "fmtest-tok-0123456789abcdef"
	if err := os.WriteFile(tokenPath, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const max = mcp.DefaultMaxSessions // 64
	d := startHTTPDaemon(t, []string{"LIBTMUX_SOCKET=fleetmux-test-http-none"}, "--no-audit", "--token-file", tokenPath)
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	open := func() string {
		t.Helper()
		code, body, sid := rawPost(t, d.url, token, "", initialize)
		if code != 200 || sid == "" {
			t.Fatalf("initialize: %d %s", code, body)
		}
		return sid
	}
	var sids []string
	for i := 0; i < 2*max; i++ {
		sids = append(sids, open())
	}
	// Only the last max sessions are open.
	for i, sid := range sids {
		code, body, _ := rawPost(t, d.url, token, sid, ping)
		if want := map[bool]int{true: 200, false: 404}[i >= len(sids)-max]; code != want {
			t.Fatalf("session %d of %d: ping %d, want %d: %s", i, len(sids), code, want, body)
		}
	}
	// Using the oldest open session makes the next-oldest the one to go.
	live := sids[len(sids)-max:]
	if code, _, _ := rawPost(t, d.url, token, live[0], ping); code != 200 {
		t.Fatal("ping")
	}
	live = append(live, open())
	if code, _, _ := rawPost(t, d.url, token, live[1], ping); code != 404 {
		t.Fatalf("the least recently used session was not the one closed: %d", code)
	}
	if code, _, _ := rawPost(t, d.url, token, live[0], ping); code != 200 {
		t.Fatalf("a recently used session was closed: %d", code)
	}
	live = append(live[:1], live[2:]...)

	// Every session busy (an open event stream): a new one is refused.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, sid := range live {
		req, _ := http.NewRequestWithContext(ctx, "GET", d.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET stream: %v %v", err, resp)
		}
		defer resp.Body.Close()
	}
	code, body, _ := rawPost(t, d.url, token, "", initialize)
	if code != 503 || !strings.Contains(body, `"error"`) || !strings.Contains(body, "MCP sessions are open") {
		t.Fatalf("new session with all %d busy: %d %s", max, code, body)
	}
	cancel()

	// Batches and bodies.
	batch := func(n int) string {
		var items []string
		for i := 0; i < n; i++ {
			items = append(items, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	var sid string
	for i := 0; sid == "" || code != 200; i++ {
		if i == 200 {
			t.Fatalf("no session after the event streams ended: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond) // the streams' ends reach the daemon
		code, body, sid = rawPost(t, d.url, token, "", initialize)
	}
	if code, body, _ := rawPost(t, d.url, token, sid, batch(32)); code != 200 || strings.Count(body, `"result"`) != 32 {
		t.Fatalf("batch of 32: %d %s", code, body)
	}
	if code, body, _ := rawPost(t, d.url, token, sid, batch(1000)); code != 400 || !strings.Contains(body, "-32600") || !strings.Contains(body, "maximum of 32") {
		t.Fatalf("batch of 1000: %d %s", code, body)
	}
	big := `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"` + strings.Repeat("a", 5<<20) + `"}}`
	if code, body, _ := rawPost(t, d.url, token, sid, big); code != 413 || !strings.Contains(body, "-32600") {
		t.Fatalf("5 MiB body: %d %.300s", code, body)
	}
	if code, _, _ := rawPost(t, d.url, token, sid, ping); code != 200 {
		t.Fatalf("the session did not survive the refusals: %d", code)
	}
}

// rpcPost POSTs one JSON-RPC message with the token (none when "") and
// the extra headers, and returns the status and the JSON-RPC answer (the
// first event of a text/event-stream answer, else the body).
func rpcPost(t *testing.T, url, token string, header map[string]string, body string) (int, map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	text := string(b)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, l := range strings.Split(text, "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				text = d
				break
			}
		}
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(text), &m)
	return resp.StatusCode, m, string(b)
}

// newest is a request of revision 2026-07-28 as SEP-2575 has it: no
// session, the revision in the MCP-Protocol-Version header and in _meta
// with the client's capabilities, the method (and tool) in Mcp-Method
// (Mcp-Name).
func newest(id int, method, name, params string) (map[string]string, string) {
	h := map[string]string{"MCP-Protocol-Version": mcp.StatelessRevision, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.StatelessRevision + `","io.modelcontextprotocol/clientInfo":{"name":"raw-newest","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if params != "" {
		meta += "," + params
	}
	return h, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, id, method, meta)
}

// TestServeHTTPNewestRevision (issue 20, case 5): a client of revision
// 2026-07-28 (the Go SDK's, which asks for it first) and raw stateless
// POSTs work against serve --http with the token: no session, tools
// listed and called; an older client's request without a session works
// too; clients of 2025-03-26, 2025-06-18 and 2025-11-25 keep their
// sessions; every one of them needs the token; the daemon never logs the
// SDK's "StreamableHTTPOptions" hint; a subscriptions/listen stream does
// not hold up shutdown.
func TestServeHTTPNewestRevision(t *testing.T) {
	sock := fmt.Sprintf("fleetmux-test-http-newest-%d", os.Getpid())
	if out, err := exec.Command("tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "newest-base", "/bin/sh").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	defer exec.Command("tmux", "-L", sock, "kill-server").Run()
	dir := t.TempDir()
	tokenPath := filepath.Join(dir, "tok")
	const token = "fmtest-tok-newest-0123456789abcdef"
	if err := os.WriteFile(tokenPath, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startHTTPDaemon(t, []string{"LIBTMUX_SOCKET=" + sock}, "--no-audit", "--token-file", tokenPath)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	t.Run("sdk clients", func(t *testing.T) {
		for _, tt := range []struct {
			ask, want string
			session   bool
		}{
			{"", mcp.StatelessRevision, false}, // the SDK's default: the newest
			{"2025-11-25", "2025-11-25", true},
			{"2025-06-18", "2025-06-18", true},
			{"2025-03-26", "2025-03-26", true},
		} {
			t.Run("revision "+tt.want, func(t *testing.T) {
				if _, err := dialHTTP(ctx, d.url, "", "no-token", tt.ask); err == nil {
					t.Errorf("connected without the token")
				}
				if _, err := dialHTTP(ctx, d.url, "wrong-"+token, "bad-token", tt.ask); err == nil {
					t.Errorf("connected with a wrong token")
				}
				cs := connectHTTP(ctx, t, d.url, token, "agent-"+tt.want, tt.ask)
				if got := cs.InitializeResult().ProtocolVersion; got != tt.want {
					t.Fatalf("negotiated %q, want %q", got, tt.want)
				}
				if (cs.ID() != "") != tt.session {
					t.Errorf("Mcp-Session-Id %q: want a session %v", cs.ID(), tt.session)
				}
				tools, err := cs.ListTools(ctx, nil)
				if err != nil || len(tools.Tools) == 0 {
					t.Fatalf("tools/list: %v %v", err, tools)
				}
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("list_sessions: %v %s", err, resultText(res))
				}
				if got, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(got), `"session_name":"newest-base"`) {
					t.Errorf("list_sessions: %s", got)
				}
				res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
				if err != nil || !res.IsError || !strings.Contains(resultText(res), "Unknown tool") {
					t.Errorf("unknown tool: %v %s", err, resultText(res))
				}
			})
		}
	})

	t.Run("raw", func(t *testing.T) {
		type check func(t *testing.T, m map[string]any, raw string)
		result := func(t *testing.T, m map[string]any) map[string]any {
			r, _ := m["result"].(map[string]any)
			if r == nil {
				t.Fatalf("no result: %v", m)
			}
			return r
		}
		complete := func(t *testing.T, m map[string]any, _ string) {
			if rt := result(t, m)["resultType"]; rt != "complete" {
				t.Errorf("resultType %v, want complete: %v", rt, m)
			}
		}
		for _, tt := range []struct {
			name   string
			token  string
			header map[string]string
			body   string
			want   int
			check  check
		}{
			{name: "discover", header: hdr(newest(1, "server/discover", "", "")), body: body(newest(1, "server/discover", "", "")), want: 200,
				check: func(t *testing.T, m map[string]any, raw string) {
					r := result(t, m)
					if vs, _ := json.Marshal(r["supportedVersions"]); !strings.Contains(string(vs), mcp.StatelessRevision) || !strings.Contains(string(vs), "2025-03-26") {
						t.Errorf("supportedVersions %s", vs)
					}
					// fleetmux's lists never change: no listChanged to listen for.
					if caps, _ := json.Marshal(r["capabilities"]); strings.Contains(string(caps), "listChanged") || !strings.Contains(string(caps), `"tools"`) {
						t.Errorf("capabilities %s", caps)
					}
				}},
			{name: "tools/list", header: hdr(newest(2, "tools/list", "", "")), body: body(newest(2, "tools/list", "", "")), want: 200,
				check: func(t *testing.T, m map[string]any, raw string) {
					if tools, _ := result(t, m)["tools"].([]any); len(tools) == 0 {
						t.Errorf("no tools: %.300s", raw)
					}
				}},
			{name: "list_sessions", header: hdr(newest(3, "tools/call", "list_sessions", `"name":"list_sessions","arguments":{}`)), body: body(newest(3, "tools/call", "list_sessions", `"name":"list_sessions","arguments":{}`)), want: 200,
				check: func(t *testing.T, m map[string]any, raw string) {
					complete(t, m, raw)
					if !strings.Contains(raw, `newest-base`) || result(t, m)["isError"] == true {
						t.Errorf("list_sessions: %.500s", raw)
					}
				}},
			{name: "unknown tool", header: hdr(newest(4, "tools/call", "no_such_tool", `"name":"no_such_tool","arguments":{}`)), body: body(newest(4, "tools/call", "no_such_tool", `"name":"no_such_tool","arguments":{}`)), want: 200,
				check: func(t *testing.T, m map[string]any, raw string) {
					complete(t, m, raw) // the reference's error result, in the revision's shape
					if result(t, m)["isError"] != true || !strings.Contains(raw, "Unknown tool") {
						t.Errorf("unknown tool: %.500s", raw)
					}
				}},
			{name: "resource not found", header: hdr(newest(5, "resources/read", "tmux://nothing-here", `"uri":"tmux://nothing-here"`)), body: body(newest(5, "resources/read", "tmux://nothing-here", `"uri":"tmux://nothing-here"`)), want: 200,
				check: func(t *testing.T, m map[string]any, raw string) {
					// The reference's code and message (BEHAVIOR.md), on this revision too.
					if e, _ := m["error"].(map[string]any); e == nil || e["code"] != float64(-32002) || !strings.Contains(raw, "Unknown resource") {
						t.Errorf("resources/read of a missing resource: %.500s", raw)
					}
				}},
			{name: "removed method", header: hdr(newest(6, "ping", "", "")), body: body(newest(6, "ping", "", "")), want: 404,
				check: func(t *testing.T, m map[string]any, raw string) {
					if e, _ := m["error"].(map[string]any); e == nil || e["code"] != float64(-32601) {
						t.Errorf("ping on 2026-07-28: %.300s", raw)
					}
				}},
			{name: "older revision, no session", header: map[string]string{"MCP-Protocol-Version": "2025-06-18"},
				body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`, want: 200,
				check: func(t *testing.T, m map[string]any, raw string) {
					if !strings.Contains(raw, `newest-base`) || result(t, m)["resultType"] != nil {
						t.Errorf("list_sessions without a session: %.500s", raw)
					}
				}},
			{name: "no revision, no session", body: `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, want: 200},
			{name: "newest, no token", token: "-", header: hdr(newest(9, "tools/list", "", "")), body: body(newest(9, "tools/list", "", "")), want: 401},
			{name: "newest, wrong token", token: "wrong-" + token, header: hdr(newest(10, "tools/list", "", "")), body: body(newest(10, "tools/list", "", "")), want: 401},
			{name: "sessionless, no token", token: "-", body: `{"jsonrpc":"2.0","id":11,"method":"tools/list"}`, want: 401},
		} {
			t.Run(tt.name, func(t *testing.T) {
				tok := token
				switch tt.token {
				case "":
				case "-":
					tok = ""
				default:
					tok = tt.token
				}
				code, m, raw := rpcPost(t, d.url, tok, tt.header, tt.body)
				if code != tt.want {
					t.Fatalf("status %d, want %d: %.500s", code, tt.want, raw)
				}
				if tt.want == 401 && strings.Contains(raw, "newest-base") {
					t.Errorf("401 with content: %s", raw)
				}
				if tt.check != nil {
					tt.check(t, m, raw)
				}
			})
		}
	})

	// A subscriptions/listen stream (the revision's event stream) stays
	// open until the client leaves; SIGTERM must end it like a GET stream
	// instead of waiting out the grace period for it.
	h, b := newest(20, "subscriptions/listen", "", `"notifications":{"toolsListChanged":true}`)
	req, _ := http.NewRequestWithContext(ctx, "POST", d.url, strings.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("subscriptions/listen: %v %v", err, resp)
	}
	defer resp.Body.Close()
	first := make([]byte, 512)
	n, _ := resp.Body.Read(first)
	if !strings.Contains(string(first[:n]), "notifications/subscriptions/acknowledged") {
		t.Errorf("listen stream starts with %q", first[:n])
	}
	if err := d.stop(t); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	s := d.stderr.String()
	// (Unknown tools are logged at ERROR, as the reference does.)
	for _, bad := range []string{"StreamableHTTPOptions", "Stateless", "cut off", token} {
		if strings.Contains(s, bad) {
			t.Errorf("stderr has %q:\n%s", bad, s)
		}
	}
}

func hdr(h map[string]string, _ string) map[string]string { return h }
func body(_ map[string]string, b string) string           { return b }
