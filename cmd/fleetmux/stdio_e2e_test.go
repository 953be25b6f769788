package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawServe pipes lines into the built binary and returns its stdout
// lines and stderr once it exits.
func rawServe(t *testing.T, env []string, lines ...string) ([]string, string) {
	t.Helper()
	cmd := exec.Command(binPath, "--no-audit")
	cmd.Env = append(os.Environ(), append([]string{"LIBTMUX_SOCKET=fleetmux-test-raw-none", "TMUX=", "TMUX_PANE="}, env...)...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, errb.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("did not exit after stdin closed\n%s", errb.String())
	}
	var got []string
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	return got, errb.String()
}

func responseIDs(t *testing.T, lines []string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, l := range lines {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", l)
		}
		kind := "result"
		if m.Error != nil {
			kind = fmt.Sprint(m.Error.Code)
		}
		ids[string(m.ID)] = kind
	}
	return ids
}

// TestStdioRobustness: a non-JSON line is answered with -32700 and the
// session goes on; everything written before stdin closes is answered;
// a normal end logs nothing at ERROR level.
func TestStdioRobustness(t *testing.T) {
	lines := []string{
		"not json",
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"broken": `,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}
	for i := 3; i < 13; i++ {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`, i))
	}
	out, stderr := rawServe(t, nil, lines...)
	ids := responseIDs(t, out)
	if ids["null"] != "-32700" {
		t.Errorf("no parse error answer: %v", ids)
	}
	for i := 1; i < 13; i++ {
		if ids[fmt.Sprint(i)] != "result" {
			t.Errorf("request %d: %q (all: %v)\nstderr: %s", i, ids[fmt.Sprint(i)], ids, stderr)
		}
	}
	if strings.Contains(stderr, "level=ERROR") {
		t.Errorf("stderr has an ERROR on a normal end:\n%s", stderr)
	}
}

// TestStdioSignalEnd: SIGTERM ends the server with status 0 and no ERROR.
func TestStdioSignalEnd(t *testing.T) {
	cmd := exec.Command(binPath, "--no-audit")
	cmd.Env = append(os.Environ(), "LIBTMUX_SOCKET=fleetmux-test-raw-none", "TMUX=", "TMUX_PANE=")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, errb := &lockedBuf{}, &lockedBuf{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, initLine+"\n")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), `"id":1`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	in.Close()
	if err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	if strings.Contains(errb.String(), "level=ERROR") {
		t.Errorf("stderr has an ERROR after SIGTERM:\n%s", errb.String())
	}
}

// TestTmuxBinEnv: the start-up check honours LIBTMUX_TMUX_BIN.
func TestTmuxBinEnv(t *testing.T) {
	tmuxPath, err := tmuxtest.LookPath()
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	out, _ := rawServe(t, []string{"PATH=" + empty, "LIBTMUX_TMUX_BIN=" + tmuxPath}, initLine)
	if ids := responseIDs(t, out); ids["1"] != "result" {
		t.Errorf("with LIBTMUX_TMUX_BIN and no tmux on PATH: %v", out)
	}
	cmd := exec.Command(binPath, "--no-audit")
	cmd.Env = append(os.Environ(), "LIBTMUX_TMUX_BIN="+filepath.Join(empty, "nope"))
	cmd.Stdin = strings.NewReader("")
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "LIBTMUX_TMUX_BIN") {
		t.Errorf("bogus LIBTMUX_TMUX_BIN: %v %s", err, msg)
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStdioInvalidRequests: valid JSON that is not a JSON-RPC request is
// answered with -32600 Invalid Request (with the id when one can be
// read) and the session goes on. Every line is followed by a ping that
// must be answered. The fixed shapes are the reported ones and their
// neighbours; then a seeded generator produces JSON values of every shape
// (scalars, arrays, nested arrays, objects with the message keys holding
// values of every type).
func TestStdioInvalidRequests(t *testing.T) {
	fixed := []struct {
		line string
		id   string // id the -32600 answer carries ("" when none is expected)
	}{
		{`[]`, "null"}, {`[1]`, "null"}, {`[{}]`, "null"}, {`[[]]`, "null"}, {`[[[{}]]]`, "null"},
		{`{}`, "null"}, {`{"jsonrpc":"2.0"}`, "null"}, {`"x"`, "null"}, {`""`, "null"}, {`null`, "null"},
		{`0`, "null"}, {`-1.5e3`, "null"}, {`true`, "null"}, {`false`, "null"},
		{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, "7"},
		{`{"id":8,"method":"ping"}`, "8"},
		{`{"jsonrpc":2,"id":"s9","method":"ping"}`, `"s9"`},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":10,"method":5}`, "10"},
		{`{"jsonrpc":"2.0","id":11,"method":null}`, "11"},
		{`{"jsonrpc":"2.0","id":12,"method":["ping"]}`, "12"},
		{`{"jsonrpc":"2.0","id":13,"error":"boom"}`, "13"},
		{`{"jsonrpc":"2.0","result":{}}`, "null"},
		{`{"jsonrpc":"2.0","id":null}`, "null"},
		// A batch: the session speaks 2025-06-18, which has no batching.
		{`[{"jsonrpc":"2.0","id":14,"method":"ping"}]`, "null"},
	}
	lines := []string{initLine, `{"jsonrpc":"2.0","method":"notifications/initialized"}`}
	probe := 0
	addProbe := func() {
		probe++
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":"probe-%d","method":"ping"}`, probe))
	}
	for _, f := range fixed {
		lines = append(lines, f.line)
		addProbe()
	}
	rng := rand.New(rand.NewPCG(19, 5))
	for i := 0; i < 300; i++ {
		b, _ := json.Marshal(randomJSON(rng, 0))
		lines = append(lines, string(b))
		addProbe()
	}
	out, stderr := rawServe(t, nil, lines...)
	answers := map[string][]int{} // id → error codes (0: a result)
	for _, l := range out {
		var batch []json.RawMessage
		if json.Unmarshal([]byte(l), &batch) != nil {
			batch = []json.RawMessage{json.RawMessage(l)}
		}
		for _, m := range batch {
			var r struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(m, &r); err != nil {
				t.Fatalf("stdout line is not JSON-RPC: %q", l)
			}
			code := 0
			if r.Error != nil {
				code = r.Error.Code
			}
			answers[string(r.ID)] = append(answers[string(r.ID)], code)
		}
	}
	for i := 1; i <= probe; i++ {
		id := fmt.Sprintf(`"probe-%d"`, i)
		if got := answers[id]; len(got) != 1 || got[0] != 0 {
			after := lines[2+2*(i-1)]
			t.Fatalf("ping %s after %s: answers %v\nstderr:\n%s", id, after, got, stderr)
		}
	}
	for _, f := range fixed {
		if f.id != "null" && !slices.Contains(answers[f.id], -32600) {
			t.Errorf("%s: no -32600 answer with id %s (answers %v)", f.line, f.id, answers[f.id])
		}
	}
	if n := len(answers["null"]); n < len(fixed)-6 {
		t.Errorf("only %d answers with id null for the invalid lines", n)
	}
	if strings.Contains(stderr, "level=ERROR") {
		t.Errorf("stderr has an ERROR:\n%s", stderr)
	}
}

// TestStdioBatchOldProtocol: a session on 2025-03-26 (which still has
// JSON-RPC batches, as the SDK serves them) gets its valid batch elements
// answered, its invalid ones (and a reused request id) answered with
// -32600, and goes on.
func TestStdioBatchOldProtocol(t *testing.T) {
	lines := []string{
		strings.Replace(initLine, "2025-06-18", "2025-03-26", 1),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"},1,{"jsonrpc":"1.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`,
		`[]`,
		`[{}]`,
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`,
	}
	out, stderr := rawServe(t, nil, lines...)
	codes := map[string][]int{}
	for _, l := range out {
		var batch []json.RawMessage
		if json.Unmarshal([]byte(l), &batch) != nil {
			batch = []json.RawMessage{json.RawMessage(l)}
		}
		for _, m := range batch {
			var r struct {
				ID    json.RawMessage     `json:"id"`
				Error *struct{ Code int } `json:"error"`
			}
			_ = json.Unmarshal(m, &r)
			c := 0
			if r.Error != nil {
				c = r.Error.Code
			}
			codes[string(r.ID)] = append(codes[string(r.ID)], c)
		}
	}
	want := map[string][]int{"1": {0}, "2": {0}, "3": {-32600}, "4": {0}, "5": {0}, "null": {-32600, -32600, -32600, -32600}}
	for id, w := range want {
		g := append([]int(nil), codes[id]...)
		slices.Sort(g)
		if !slices.Equal(g, w) {
			t.Errorf("id %s: answers %v, want %v\nstdout: %q\nstderr: %s", id, g, w, out, stderr)
		}
	}
}

// randomJSON is a random JSON value: scalars, arrays, and objects whose
// keys are mostly JSON-RPC's own, up to three levels deep.
func randomJSON(rng *rand.Rand, depth int) any {
	keys := []string{"jsonrpc", "id", "method", "params", "result", "error", "x"}
	scalar := func() any {
		switch rng.IntN(9) {
		case 0:
			return nil
		case 1:
			return rng.IntN(2) == 0
		case 2:
			return rng.IntN(100)
		case 3:
			return -rng.Float64() * 1e6
		case 4:
			return "2.0"
		case 5:
			return "1.0"
		case 6:
			return "x/unknown"
		case 7:
			return "ping"
		default:
			return ""
		}
	}
	k := rng.IntN(3)
	if depth >= 3 {
		k = 0
	}
	switch k {
	case 0:
		return scalar()
	case 1:
		a := make([]any, rng.IntN(4))
		for i := range a {
			a[i] = randomJSON(rng, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for i := rng.IntN(5); i > 0; i-- {
			key := keys[rng.IntN(len(keys))]
			if key == "id" && rng.IntN(2) == 0 {
				m[key] = fmt.Sprintf("rnd-%d", rng.IntN(1000)) // never a probe's id
				continue
			}
			m[key] = randomJSON(rng, depth+1)
		}
		return m
	}
}

// TestTmuxTooOld: fleetmux (stdio and serve) refuses to start on a tmux
// older than 3.2a, naming the version found and the minimum: the real
// tmux 3.1c (Debian bullseye's, built by .ci/tmux-versions.sh) and
// scripts that only answer -V for the boundary.
func TestTmuxTooOld(t *testing.T) {
	dir := t.TempDir()
	fake := func(v string) string {
		p := filepath.Join(dir, "tmux-"+v)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho 'tmux "+v+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	real31 := tmuxtest.Version(t, "3.1c")
	for _, tc := range []struct {
		name, bin, found string
		refused          bool
	}{
		{"3.1c stdio", real31, "3.1c", true},
		{"3.1c serve", real31, "3.1c", true},
		{"3.2 stdio", fake("3.2"), "3.2", true},
		{"3.0a serve", fake("3.0a"), "3.0a", true},
		{"2.9 stdio", fake("2.9"), "2.9", true},
		{"3.2a stdio", fake("3.2a"), "", false},
		{"next-3.6 stdio", fake("next-3.6"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.refused {
				out, errs := rawServe(t, []string{"LIBTMUX_TMUX_BIN=" + tc.bin}, initLine)
				if ids := responseIDs(t, out); ids["1"] != "result" {
					t.Fatalf("tmux %s was refused: %v\n%s", tc.bin, out, errs)
				}
				return
			}
			args := []string{"--no-audit"}
			if strings.HasSuffix(tc.name, "serve") {
				args = []string{"serve", "--http", "127.0.0.1:0", "--no-auth"}
			}
			cmd := exec.Command(binPath, args...)
			cmd.Env = append(os.Environ(), "LIBTMUX_TMUX_BIN="+tc.bin, "LIBTMUX_SOCKET=fleetmux-test-old-none")
			cmd.Stdin = strings.NewReader("")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("fleetmux %v did not exit on tmux %s\n%s", args, tc.found, stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("exit: %v, want status 1", err)
			}
			want := "fleetmux: tmux " + tc.found + " (" + tc.bin + ", LIBTMUX_TMUX_BIN) is older than tmux 3.2a, the oldest fleetmux supports"
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr %q\nwant it to contain %q", stderr.String(), want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}
