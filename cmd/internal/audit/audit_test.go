package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fleetmux/fleetmux/store"
)

var auditNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testAuditEnv(env map[string]string) auditEnv {
	return auditEnv{
		getenv: func(k string) string { return env[k] },
		now:    func() time.Time { return auditNow },
		loc:    time.UTC,
		poll:   20 * time.Millisecond,
	}
}

func runAuditTest(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = auditMain(context.Background(), args, testAuditEnv(env), &out, &errb)
	return code, out.String(), errb.String()
}

func TestParseAuditArgs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		want    store.Query
		wantErr string
	}{
		{name: "defaults", want: store.Query{Limit: 100}},
		{name: "filters", args: []string{"--host", "devbox-3", "--tool=send_keys", "--outcome", "refused", "--limit", "0", "--session", "S1"},
			want: store.Query{Host: "devbox-3", Tool: "send_keys", Outcome: "refused", Session: "S1"}},
		{name: "since duration", args: []string{"--since", "90m"}, want: store.Query{Since: auditNow.Add(-90 * time.Minute), Limit: 100}},
		{name: "since days", args: []string{"--since", "1d12h", "--until", "1h"},
			want: store.Query{Since: auditNow.Add(-36 * time.Hour), Until: auditNow.Add(-time.Hour), Limit: 100}},
		{name: "rfc3339", args: []string{"--since", "2026-02-28T10:00:00Z", "--until", "2026-02-28T11:00:00.5+01:00"},
			want: store.Query{Since: time.Date(2026, 2, 28, 10, 0, 0, 0, time.UTC),
				Until: time.Date(2026, 2, 28, 10, 0, 0, 5e8, time.UTC), Limit: 100}},
		{name: "bad outcome", args: []string{"--outcome", "fine"}, wantErr: "--outcome"},
		{name: "bad since", args: []string{"--since", "yesterday"}, wantErr: "--since"},
		{name: "bad days", args: []string{"--since", "2dx"}, wantErr: "bad duration"},
		{name: "negative duration", args: []string{"--since", "-1h"}, wantErr: "negative"},
		{name: "since after until", args: []string{"--since", "1h", "--until", "2h"}, wantErr: "before"},
		{name: "negative limit", args: []string{"--limit", "-1"}, wantErr: "--limit"},
		{name: "positional", args: []string{"send_keys"}, wantErr: "unexpected argument"},
		{name: "unknown flag", args: []string{"--bogus"}, wantErr: "bogus"},
		{name: "compact and follow", args: []string{"--compact", "--follow"}, wantErr: "cannot be combined"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseAuditArgs(tt.args, auditNow, &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(stderr.String(), tt.wantErr) {
					t.Fatalf("err = %v, stderr %q, want mention of %q", err, stderr.String(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, w := o.query, tt.want
			if g.Host != w.Host || g.Tool != w.Tool || g.Outcome != w.Outcome || g.Session != w.Session || g.Limit != w.Limit ||
				!g.Since.Equal(w.Since) || !g.Until.Equal(w.Until) {
				t.Errorf("query = %+v, want %+v", g, w)
			}
		})
	}
}

func TestAuditUsageAndExitCodes(t *testing.T) {
	code, out, _ := runAuditTest(t, nil, "--help")
	if code != 0 || !strings.Contains(out, "Usage: fleetmux audit") || !strings.Contains(out, "--follow") {
		t.Errorf("--help: %d %q", code, out)
	}
	if code, _, errOut := runAuditTest(t, nil, "--outcome", "x"); code != 2 || errOut == "" {
		t.Errorf("bad usage: %d %q", code, errOut)
	}
}

func TestAuditMissingStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none", "state.db")
	for _, args := range [][]string{{"--state", path}, {"--state", path, "--compact"}} {
		code, out, errOut := runAuditTest(t, nil, args...)
		want := "no audit records yet (state file " + path + " does not exist)"
		if code != 0 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("%v: %d %q %q", args, code, out, errOut)
		}
	}
	// FLEETMUX_STATE is used without --state, and nothing is created.
	code, _, errOut := runAuditTest(t, map[string]string{"FLEETMUX_STATE": path})
	if code != 0 || !strings.Contains(errOut, path) {
		t.Errorf("FLEETMUX_STATE: %d %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("audit created the state directory: %v", err)
	}
}

func seedAudit(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs := []store.Record{
		{Time: auditNow.Add(-3 * time.Hour), Host: "local", Tool: "list_sessions", Outcome: "ok",
			Duration: 1234 * time.Microsecond, Args: json.RawMessage(`{}`)},
		{Time: auditNow.Add(-30 * time.Minute), Host: "devbox-3", Tool: "send_keys", Outcome: "ok", Parent: "call_mutating_tools_batch", MCPSessionID: "http-1",
			Duration: 2500 * time.Millisecond, Args: json.RawMessage(`{"pane_id":"%1","keys":{"len":5,"sha256_prefix":"2cf24dba5fb0"}}`)},
		{Time: auditNow.Add(-10 * time.Minute), Host: "devbox-3", Tool: "kill_server", Outcome: "refused",
			Error: "Tool 'kill_server' requires tier destructive\nsecond line \x1b[31m", Args: json.RawMessage(`{"socket_name": "a\u001b[2Jb"}`)},
	}
	if err := s.Append(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAuditTable(t *testing.T) {
	s := seedAudit(t)
	code, out, errOut := runAuditTest(t, nil, "--state", s.Path())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `TIME                           HOST      TOOL                                 OUTCOME  DURATION  ERROR                                         ARGS
2026-03-01T09:00:00.000Z       local     list_sessions                        ok         1.23ms                                                {}
2026-03-01T11:30:00.000Z       devbox-3  call_mutating_tools_batch/send_keys  ok         2.500s                                                {"pane_id":"%1","keys":{"len":5,"sha256_prefix":"2cf24dba5fb0"}}
2026-03-01T11:50:00.000Z       devbox-3  kill_server                          refused    0.00ms  Tool 'kill_server' requires tier destructive  {"socket_name":"a\u001b[2Jb"}
`
	if out != want {
		t.Errorf("table:\n%s\nwant:\n%s", out, want)
	}
	if strings.Contains(out, "\x1b") {
		t.Error("escape character reached the terminal")
	}

	code, out, _ = runAuditTest(t, nil, "--state", s.Path(), "--host", "devbox-3", "--limit", "1")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "kill_server") {
		t.Errorf("filtered: %d %q", code, out)
	}
	code, out, errOut = runAuditTest(t, nil, "--state", s.Path(), "--tool", "nope")
	if code != 0 || out != "" || !strings.Contains(errOut, "no matching audit records") {
		t.Errorf("no match: %d %q %q", code, out, errOut)
	}
	code, out, _ = runAuditTest(t, nil, "--state", s.Path(), "--since", "1h")
	if code != 0 || strings.Contains(out, "list_sessions") || !strings.Contains(out, "send_keys") {
		t.Errorf("--since 1h: %q", out)
	}
}

func TestAuditJSONLines(t *testing.T) {
	s := seedAudit(t)
	code, out, _ := runAuditTest(t, map[string]string{"FLEETMUX_STATE": s.Path()}, "--json", "--outcome", "ok")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("exit %d, %d lines: %q", code, len(lines), out)
	}
	var r store.Record
	if err := json.Unmarshal([]byte(lines[1]), &r); err != nil {
		t.Fatal(err)
	}
	if r.Tool != "send_keys" || r.Parent != "call_mutating_tools_batch" || r.Duration != 2500*time.Millisecond || r.Seq != 2 || r.MCPSessionID != "http-1" {
		t.Errorf("decoded %+v", r)
	}
	if strings.Contains(lines[0], "mcp_session_id") {
		t.Errorf("a record without an MCP session has the key: %s", lines[0])
	}
	code, out, _ = runAuditTest(t, map[string]string{"FLEETMUX_STATE": s.Path()}, "--json", "--session", "http-1")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"mcp_session_id":"http-1"`) {
		t.Errorf("--session http-1: %d %q", code, out)
	}
}

func TestAuditCompact(t *testing.T) {
	s := seedAudit(t)
	code, out, errOut := runAuditTest(t, nil, "--state", s.Path(), "--compact")
	if code != 0 || !strings.HasPrefix(out, "compacted "+s.Path()+": ") || !strings.Contains(out, "KiB") {
		t.Errorf("compact: %d %q %q", code, out, errOut)
	}
	code, out, _ = runAuditTest(t, nil, "--state", s.Path(), "--compact", "--json")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["after_bytes"] == nil {
		t.Errorf("compact --json: %d %q", code, out)
	}
}

func TestAuditCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runAuditTest(t, nil, "--state", path)
	if code != 1 || !strings.Contains(errOut, path) || !strings.Contains(errOut, "corrupt") {
		t.Errorf("corrupt: %d %q", code, errOut)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAuditFollow(t *testing.T) {
	s := seedAudit(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- auditMain(ctx, []string{"--state", s.Path(), "--follow", "--host", "devbox-3", "--limit", "1"},
			testAuditEnv(nil), &out, &errOut)
	}()
	waitFor := func(substr string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(out.String(), substr) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in output:\n%s\nstderr: %s", substr, out.String(), errOut.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("kill_server")
	for _, r := range []store.Record{
		{Time: auditNow.Add(-5 * time.Minute), Host: "devbox-3", Tool: "late_commit", Outcome: "ok"},
		{Time: auditNow, Host: "local", Tool: "other_host", Outcome: "ok"},
		{Time: auditNow.Add(time.Second), Host: "devbox-3", Tool: "capture_pane", Outcome: "ok"},
	} {
		if err := s.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("capture_pane")
	time.Sleep(100 * time.Millisecond) // a few more polls must not repeat anything
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
	got := out.String()
	for tool, n := range map[string]int{"TIME ": 1, " kill_server ": 1, " late_commit ": 1, " capture_pane ": 1, "other_host": 0, "send_keys": 0} {
		if c := strings.Count(got, tool); c != n {
			t.Errorf("%s printed %d times, want %d:\n%s", tool, c, n, got)
		}
	}
}

func TestAuditFollowWaitsForFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- auditMain(ctx, []string{"--state", path, "--follow"}, testAuditEnv(nil), &out, &errOut)
	}()
	time.Sleep(60 * time.Millisecond)
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, store.Record{Time: auditNow, Host: "local", Tool: "first_call", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "first_call") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if !strings.Contains(out.String(), "first_call") || !strings.Contains(errOut.String(), "no audit records yet") {
		t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
	}
}

func TestParseWhenLocalForms(t *testing.T) {
	for _, s := range []string{"2026-02-28", "2026-02-28 10:00:00", "2026-02-28T10:00:00"} {
		got, err := parseWhen(s, auditNow)
		if err != nil || got.Location() != time.Local || got.Year() != 2026 {
			t.Errorf("parseWhen(%q) = %v, %v", s, got, err)
		}
	}
}

func TestCleanCell(t *testing.T) {
	for in, want := range map[string]string{
		"plain":          "plain",
		"a\x1b[31mb":     `a\x1b[31mb`,
		"tab\there":      `tab\x09here`,
		"bidi\u202eevil": `bidi\u202eevil`,
		"c1\u0085":       `c1\x85`,
		"bad\xffutf8":    `bad\xffutf8`,
		"ok\uFFFDrepl":   "ok\uFFFDrepl",
		"日本":             "日本",
	} {
		if got := cleanCell(in); got != want {
			t.Errorf("cleanCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// The audit reader never changes the file it reads: not the bytes, not the
// mode, and an empty file stays empty.
func TestAuditDoesNotModifyFile(t *testing.T) {
	s := seedAudit(t)
	if err := os.Chmod(s.Path(), 0o400); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"--json"}, {"--since", "1h"}, {"--limit", "1", "--tool", "kill_server"}} {
		code, out, errOut := runAuditTest(t, nil, append([]string{"--state", s.Path()}, args...)...)
		if code != 0 || out == "" {
			t.Errorf("%v: %d %q %q", args, code, out, errOut)
		}
	}
	after, _ := os.ReadFile(s.Path())
	if !bytes.Equal(before, after) {
		t.Error("fleetmux audit changed the state file")
	}
	if fi, _ := os.Stat(s.Path()); fi.Mode().Perm() != 0o400 {
		t.Errorf("mode changed to %o", fi.Mode().Perm())
	}

	empty := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runAuditTest(t, nil, "--state", empty)
	if code != 0 || out != "" || !strings.Contains(errOut, "no matching audit records") {
		t.Errorf("empty file: %d %q %q", code, out, errOut)
	}
	if fi, _ := os.Stat(empty); fi.Size() != 0 || fi.Mode().Perm() != 0o644 {
		t.Errorf("empty file became %d bytes, mode %o", fi.Size(), fi.Mode().Perm())
	}
}

// A file of an older schema is still readable: audit migrates it first.
func TestAuditMigratesOldSchema(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "store", "testdata", "v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v1.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runAuditTest(t, nil, "--state", path, "--json", "--limit", "0")
	if code != 0 || strings.Count(out, "\n") == 0 {
		t.Errorf("v1 file: %d %q %q", code, out, errOut)
	}
}

func TestAuditLockedAndCorruptOneLine(t *testing.T) {
	s := seedAudit(t)
	holder, err := bolt.Open(s.Path(), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	env := testAuditEnv(nil)
	env.lockTimeout = 200 * time.Millisecond
	var out, errb bytes.Buffer
	start := time.Now()
	code := auditMain(context.Background(), []string{"--state", s.Path()}, env, &out, &errb)
	holder.Close()
	if code != 1 || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), "locked") {
		t.Errorf("locked: %d %q %q", code, out.String(), errb.String())
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("locked file: waited %s", time.Since(start))
	}

	bad := filepath.Join(t.TempDir(), "bad.db")
	good, _ := os.ReadFile(s.Path())
	smashed := append(append([]byte{}, good[:8192]...), bytes.Repeat([]byte{0xff}, len(good)-8192)...)
	if err := os.WriteFile(bad, smashed, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, errOut := runAuditTest(t, nil, "--state", bad)
	if code != 1 || stdout != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, bad) || !strings.Contains(errOut, "move it aside") {
		t.Errorf("corrupt: %d %q %q", code, stdout, errOut)
	}
}
