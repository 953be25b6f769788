package mcp

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/tools"
)

// watchClient is a second MCP client on the test server that records
// progress notifications and warning logs.
type watchClient struct {
	e        *testEnv
	cs       *sdk.ClientSession
	mu       sync.Mutex
	progress []*sdk.ProgressNotificationParams
	logs     []string
	started  chan struct{}
	once     sync.Once
}

func (e *testEnv) watchClient() *watchClient {
	e.t.Helper()
	w := &watchClient{e: e, started: make(chan struct{})}
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := e.srv.sdk.Connect(ctx, st, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "fleetmux-watch", Version: "0"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			w.mu.Lock()
			w.progress = append(w.progress, req.Params)
			w.mu.Unlock()
			w.once.Do(func() { close(w.started) })
		},
		//lint:ignore SA1019 the test checks the warnings sent through MCP logging
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if s, ok := req.Params.Data.(string); ok {
				w.logs = append(w.logs, string(req.Params.Level)+": "+s)
			}
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	//lint:ignore SA1019 the test checks the warnings sent through MCP logging
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = cs.Close(); _ = ss.Close() })
	w.cs = cs
	return w
}

// watchParams asks for log messages on this request too: clients on the
// newest protocol carry the log level per request in _meta.
func watchParams(name string, args map[string]any) *sdk.CallToolParams {
	//lint:ignore SA1019 the test checks the warnings sent through MCP logging
	return &sdk.CallToolParams{Name: name, Arguments: args, Meta: sdk.Meta{sdk.MetaKeyLogLevel: "debug"}}
}

// waitCall is a wait_for_text call running in the background.
type waitCall struct {
	done chan struct{}
	res  *sdk.CallToolResult
	err  error
}

// start calls a tool with a progress token in the background.
func (w *watchClient) start(name string, args map[string]any) *waitCall {
	wc := &waitCall{done: make(chan struct{})}
	go func() {
		defer close(wc.done)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p := watchParams(name, args)
		p.SetProgressToken("wait-token")
		wc.res, wc.err = w.cs.CallTool(ctx, p)
	}()
	return wc
}

// entered blocks until the first progress notification, which the wait
// sends after taking its entry snapshot.
func (w *watchClient) entered() {
	w.e.t.Helper()
	select {
	case <-w.started:
	case <-time.After(10 * time.Second):
		w.e.t.Fatal("no progress notification from wait_for_text")
	}
}

func (wc *waitCall) result(t *testing.T) (WaitForTextResult, *sdk.CallToolResult) {
	t.Helper()
	select {
	case <-wc.done:
	case <-time.After(30 * time.Second):
		t.Fatal("wait_for_text did not return")
	}
	if wc.err != nil {
		t.Fatal(wc.err)
	}
	var r WaitForTextResult
	if !wc.res.IsError {
		b, _ := json.Marshal(wc.res.StructuredContent)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
	}
	return r, wc.res
}

func (w *watchClient) logged(sub string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.logs {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func TestWaitForTextMatchesNewOutput(t *testing.T) {
	e := shEnv(t)
	pane := e.firstPane()
	w := e.watchClient()
	wc := w.start("wait_for_text", map[string]any{"patterns": []any{"nomatch", "wt_ready"}, "pane_id": pane, "timeout": 5})
	w.entered()
	e.shType(pane, "printf '%s_%s\\n' WT READY")
	r, res := wc.result(t)
	if res.IsError || !r.Found || r.Outcome != "matched" || r.MatchedIndex == nil || *r.MatchedIndex != 1 || !anyContains(r.MatchedLines, "WT_READY") {
		t.Fatalf("match: %+v %s", r, text(res))
	}
	if r.PaneID != pane || !r.SawNewOutput || r.MatchedAtEntry || r.EffectiveTimeout != 5 || r.ElapsedSeconds < 0 || !anyContains(r.Tail, "WT_READY") {
		t.Fatalf("match fields: %+v", r)
	}

	// Progress: total is the effective timeout, the message names the pane.
	w.mu.Lock()
	first := w.progress[0]
	w.mu.Unlock()
	if first.Total != 5 || !strings.HasPrefix(first.Message, "Waiting on pane "+pane+": ") || !strings.Contains(first.Message, "s elapsed, ") || !strings.HasSuffix(first.Message, "s left") {
		t.Fatalf("progress %+v", first)
	}

	// Case-sensitive matching misses the lower-case pattern.
	wc = w.start("wait_for_text", map[string]any{"patterns": []any{"wt_again"}, "match_case": true, "timeout": 1, "interval": 0.1})
	e.shType(pane, "printf '%s_%s\\n' WT AGAIN")
	if r, _ := wc.result(t); r.Found || r.Outcome != "timeout" {
		t.Fatalf("match_case: %+v", r)
	}
	w.mu.Lock()
	n := len(w.progress)
	w.mu.Unlock()
	if n < 3 {
		t.Fatalf("only %d progress notifications", n)
	}
	waitFor(t, "the timeout warning", func() bool { return w.logged("warning: No match in pane " + pane + " before 1.0s timeout") })
}

func TestWaitForTextIgnoresExistingText(t *testing.T) {
	e := shEnv(t)
	pane := e.firstPane()
	e.shSync(pane, "printf '%s_%s\\n' OLD MARK")
	var r WaitForTextResult
	e.ok("wait_for_text", map[string]any{"patterns": []any{"OLD_MARK"}, "timeout": 0.5}, &r)
	if r.Found || r.Outcome != "timeout" || !r.MatchedAtEntry || r.SawNewOutput || r.MatchedIndex != nil || len(r.MatchedLines) != 0 || r.EffectiveTimeout != 0.5 {
		t.Fatalf("pre-existing text: %+v", r)
	}
	// patterns=null on a silent pane: timeout without new output.
	e.ok("wait_for_text", map[string]any{"patterns": nil, "pane_id": pane, "timeout": 0.3}, &r)
	if r.Found || r.Outcome != "timeout" || r.SawNewOutput || r.MatchedAtEntry {
		t.Fatalf("silent pane: %+v", r)
	}
}

func TestWaitForTextStopAndAnyOutput(t *testing.T) {
	e := shEnv(t)
	pane := e.firstPane()
	w := e.watchClient()
	wc := w.start("wait_for_text", map[string]any{"patterns": []any{"WT_OK"}, "stop": []any{"nothing", "WT_FA[I]L"}, "regex": true, "pane_id": pane, "timeout": 5})
	w.entered()
	e.shType(pane, "printf '%s_%s\\n' WT FAIL")
	r, res := wc.result(t)
	if res.IsError || r.Found || r.Outcome != "stopped" || r.MatchedIndex == nil || *r.MatchedIndex != 1 || !anyContains(r.MatchedLines, "WT_FAIL") {
		t.Fatalf("stop: %+v %s", r, text(res))
	}
	e.shSettle(pane)

	w2 := e.watchClient()
	wc = w2.start("wait_for_text", map[string]any{"pane_id": pane, "timeout": 5})
	w2.entered()
	e.shType(pane, "printf '%s_%s\\n' ANY OUT")
	r, res = wc.result(t)
	if res.IsError || !r.Found || r.Outcome != "any_output" || r.MatchedIndex != nil || !r.SawNewOutput || len(r.MatchedLines) == 0 || len(r.MatchedLines) > 20 {
		t.Fatalf("any_output: %+v %s", r, text(res))
	}
}

func TestWaitForTextTailCap(t *testing.T) {
	e := shEnv(t)
	pane := e.firstPane()
	w := e.watchClient()
	wc := w.start("wait_for_text", map[string]any{"patterns": []any{"BURST_DONE"}, "pane_id": pane, "timeout": 5})
	w.entered()
	e.shType(pane, "i=0; while [ $i -lt 200 ]; do i=$((i+1)); printf 'burst line %03d %s\\n' $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done; printf '%s_%s\\n' BURST DONE")
	r, res := wc.result(t)
	if res.IsError || !r.Found {
		t.Fatalf("burst: %+v %s", r, text(res))
	}
	if len(r.Tail) > 20 || tools.JoinedSize(r.Tail) > 2000 || len(r.MatchedLines) > 20 {
		t.Fatalf("tail not capped: %d lines, %d bytes", len(r.Tail), tools.JoinedSize(r.Tail))
	}
}

func TestWaitForTextValidation(t *testing.T) {
	e := newEnv(t)
	w := e.watchClient()
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"interval": 0}, "interval must be at least 0.01 s (received 0.0)"},
		{map[string]any{"interval": 0.001}, "interval must be at least 0.01 s (received 0.001)"},
		{map[string]any{"timeout": 0}, "timeout must be positive (received 0.0)"},
		{map[string]any{"timeout": -2.5}, "timeout must be positive (received -2.5)"},
		{map[string]any{"patterns": []any{}}, "patterns must be a non-empty list, or null to wait for any new output"},
		{map[string]any{"patterns": []any{"ok", ""}}, "patterns pattern must be a non-empty string"},
		{map[string]any{"patterns": []any{"ok"}, "stop": []any{""}}, "stop pattern must be a non-empty string"},
		{map[string]any{"patterns": []any{"(abc"}, "regex": true}, "Invalid regex pattern: "},
		{map[string]any{"patterns": []any{"x"}, "pane_id": "%999"}, "Pane not found: Pane not found: %999"},
		{map[string]any{"patterns": []any{"x"}, "window_id": "@999"}, "Object not found: Could not find window_id=@999 for list-windows ('-a',)"},
		{map[string]any{"patterns": []any{"x"}, "session_id": "$999"}, "Object not found: Could not find session_id=$999 for list-sessions ()"},
		{map[string]any{"patterns": []any{"x"}, "session_name": "nope"}, "Object not found: Could not find session_name=nope for list-sessions ()"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := w.cs.CallTool(ctx, watchParams("wait_for_text", tc.args))
		cancel()
		if err != nil || !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%v: %v %q, want %q", tc.args, err, text(res), tc.want)
		}
	}
	// A literal regex metacharacter is fine without regex=true; a bad
	// regex is also reported to the client as a warning.
	var r WaitForTextResult
	e.ok("wait_for_text", map[string]any{"patterns": []any{"(abc"}, "timeout": 0.1}, &r)
	waitFor(t, "the bad-regex warning", func() bool { return w.logged("warning: Invalid regex pattern: ") })
	// The targets resolve like the shared resolver does.
	pane := e.firstPane()
	win := e.tmux("display-message", "-p", "-t", pane, "#{window_id}")
	sid := e.tmux("display-message", "-p", "-t", pane, "#{session_id}")
	for _, args := range []map[string]any{{"window_id": win}, {"session_id": sid}, {"session_name": "fixture"}, {}} {
		args["timeout"] = 0.1
		e.ok("wait_for_text", args, &r)
		if r.PaneID != pane {
			t.Fatalf("%v resolved %s, want %s", args, r.PaneID, pane)
		}
	}
}

func TestWaitForTextClamp(t *testing.T) {
	e := newEnv(t, withSettings(Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 1}))
	var r WaitForTextResult
	start := time.Now()
	e.ok("wait_for_text", map[string]any{"patterns": []any{"never-printed"}, "timeout": 3600}, &r)
	if r.Found || r.EffectiveTimeout != 1 || time.Since(start) > 3*time.Second {
		t.Fatalf("clamp: %+v after %v", r, time.Since(start))
	}
}

func TestWaitForTextAnchorLoss(t *testing.T) {
	e := shEnv(t)
	pane := e.firstPane()

	w := e.watchClient()
	wc := w.start("wait_for_text", map[string]any{"patterns": []any{"never"}, "pane_id": pane, "timeout": 5})
	w.entered()
	e.tmux("respawn-pane", "-k", "-t", pane)
	_, res := wc.result(t)
	if !res.IsError || !strings.Contains(text(res), "pane "+pane+" was respawned (pid ") {
		t.Fatalf("respawn: %s", text(res))
	}
	e.shSettle(pane)

	// History that shrinks below the entry baseline is an error.
	e.shSync(pane, "i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo $i; done")
	w2 := e.watchClient()
	wc = w2.start("wait_for_text", map[string]any{"patterns": []any{"never"}, "pane_id": pane, "timeout": 5})
	w2.entered()
	e.tmux("clear-history", "-t", pane)
	_, res = wc.result(t)
	if !res.IsError || !strings.Contains(text(res), "history shrank below entry baseline (history_size ") {
		t.Fatalf("clear-history: %s", text(res))
	}

	// Polling in the history-limit trim-risk band warns once.
	e.tmux("set-option", "-g", "history-limit", "20")
	small := e.tmux("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", pane)
	e.shSettle(small)
	e.shSync(small, "i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo $i; done")
	w3 := e.watchClient()
	if r, res := w3.start("wait_for_text", map[string]any{"patterns": []any{"never"}, "pane_id": small, "timeout": 0.3}).result(t); res.IsError || r.Found {
		t.Fatalf("trim-risk wait: %+v %s", r, text(res))
	}
	// The history size in the band (18-20: tmux trims 10% at the limit)
	// depends on how many rows the typed lines wrapped to, which depends
	// on the length of the tmux path shSync types.
	band := regexp.MustCompile(`pane ` + regexp.QuoteMeta(small) + ` is polling in the history-limit trim-risk band \(history_size (18|19|20) / history_limit 20\)`)
	waitFor(t, "the trim-risk warning", func() bool {
		w3.mu.Lock()
		defer w3.mu.Unlock()
		for _, l := range w3.logs {
			if band.MatchString(l) {
				return true
			}
		}
		return false
	})
}
