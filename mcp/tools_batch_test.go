package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/tools"
)

type batchOut struct {
	Results []struct {
		Index             int              `json:"index"`
		Tool              string           `json:"tool"`
		Success           bool             `json:"success"`
		Error             *string          `json:"error"`
		Content           []map[string]any `json:"content"`
		StructuredContent map[string]any   `json:"structured_content"`
		Meta              map[string]any   `json:"meta"`
		ElapsedSeconds    float64          `json:"elapsed_seconds"`
	} `json:"results"`
	Succeeded              int  `json:"succeeded"`
	Failed                 int  `json:"failed"`
	StoppedAt              *int `json:"stopped_at"`
	ResponseTruncated      bool `json:"response_truncated"`
	ResponseTruncatedBytes int  `json:"response_truncated_bytes"`
}

func batchOp(tool string, args map[string]any) map[string]any {
	if args == nil {
		args = map[string]any{}
	}
	return map[string]any{"tool": tool, "arguments": args}
}

func (e *testEnv) batch(wrapper string, onError string, ops ...map[string]any) (batchOut, *sdk.CallToolResult) {
	e.t.Helper()
	list := make([]any, len(ops))
	for i, o := range ops {
		list[i] = o
	}
	args := map[string]any{"operations": list}
	if onError != "" {
		args["on_error"] = onError
	}
	var out batchOut
	res := e.call(wrapper, args)
	if res.IsError {
		e.t.Fatalf("%s failed: %s", wrapper, text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("decode %s: %v", b, err)
	}
	return out, res
}

func batchErrText(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestBatchReadonlyRows(t *testing.T) {
	e := newEnv(t)
	out, res := e.batch("call_readonly_tools_batch", "", batchOp("list_sessions", nil), batchOp("get_server_info", nil))
	if out.Succeeded != 2 || out.Failed != 0 || out.StoppedAt != nil || out.ResponseTruncated || out.ResponseTruncatedBytes != 0 {
		t.Fatalf("counters: %+v", out)
	}
	ls, info := out.Results[0], out.Results[1]
	if ls.Index != 0 || ls.Tool != "list_sessions" || !ls.Success || ls.Error != nil || ls.ElapsedSeconds < 0 {
		t.Fatalf("row 0: %+v", ls)
	}
	if len(ls.Content) != 1 || ls.Content[0]["type"] != "text" || len(ls.Content[0]) != 2 {
		t.Fatalf("row 0 content: %v", ls.Content)
	}
	txt, _ := ls.Content[0]["text"].(string)
	if !strings.HasPrefix(txt, `[{"session_id":"$`) || !strings.Contains(txt, `"session_name":"fixture"`) {
		t.Fatalf("row 0 text: %s", txt)
	}
	if list, ok := ls.StructuredContent["result"].([]any); !ok || len(list) != 1 {
		t.Fatalf("row 0 structured: %v", ls.StructuredContent)
	}
	if fm, ok := ls.Meta["fastmcp"].(map[string]any); !ok || fm["wrap_result"] != true {
		t.Fatalf("row 0 meta: %v", ls.Meta)
	}
	if !info.Success || info.Meta != nil || info.StructuredContent["is_alive"] != true || info.Index != 1 {
		t.Fatalf("row 1: %+v", info)
	}
	// The batch's text keeps model field order, nested blocks included.
	body := text(res)
	for _, want := range []string{
		`{"results":[{"index":0,"tool":"list_sessions","success":true,"error":null,"content":[{"type":"text","text":"[{\"session_id\":`,
		`"structured_content":{"result":[{"session_id":`,
		`"meta":{"fastmcp":{"wrap_result":true}},"elapsed_seconds":`,
		`"structured_content":{"is_alive":true,"socket_name":`,
		`"succeeded":2,"failed":0,"stopped_at":null,"response_truncated":false,"response_truncated_bytes":0}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("batch text lacks %s\n%s", want, body)
		}
	}
}

func TestBatchTierChecks(t *testing.T) {
	e := newEnv(t)
	out, res := e.batch("call_readonly_tools_batch", "", batchOp("create_session", map[string]any{"session_name": "nope"}), batchOp("list_sessions", nil))
	if res.IsError || out.Succeeded != 0 || out.Failed != 1 || out.StoppedAt == nil || *out.StoppedAt != 0 || len(out.Results) != 1 {
		t.Fatalf("readonly wrapper with mutating tool: %+v", out)
	}
	r := out.Results[0]
	if want := "Tool 'create_session' has tier 'mutating', which exceeds batch tier readonly."; batchErrText(r.Error) != want || r.Success || len(r.Content) != 0 || r.StructuredContent != nil || r.Meta != nil {
		t.Fatalf("row: %+v (error %q)", r, batchErrText(r.Error))
	}
	if strings.Contains(e.tmux("list-sessions", "-F", "#{session_name}"), "nope") {
		t.Fatal("a refused operation ran")
	}
	out, _ = e.batch("call_mutating_tools_batch", "", batchOp("kill_server", nil))
	if want := "Tool 'kill_server' has tier 'destructive', which exceeds batch tier mutating."; batchErrText(out.Results[0].Error) != want {
		t.Fatalf("mutating wrapper: %q", batchErrText(out.Results[0].Error))
	}
	// The tier is a ceiling: lower tiers pass through higher wrappers.
	out, _ = e.batch("call_destructive_tools_batch", "", batchOp("list_sessions", nil), batchOp("create_session", map[string]any{"session_name": "made"}))
	if out.Succeeded != 2 {
		t.Fatalf("destructive wrapper: %+v", out)
	}
	out, _ = e.batch("call_destructive_tools_batch", "", batchOp("call_destructive_tools_batch", map[string]any{"operations": []any{}}))
	if want := "Batch tools cannot call batch tools recursively."; batchErrText(out.Results[0].Error) != want || out.Results[0].Success {
		t.Fatalf("recursive: %q", batchErrText(out.Results[0].Error))
	}
}

func TestBatchContinueAfterUnknownTool(t *testing.T) {
	e := newEnv(t)
	out, res := e.batch("call_mutating_tools_batch", "continue", batchOp("missing_probe", nil), batchOp("create_session", map[string]any{"session_name": "kept-going"}))
	if res.IsError || out.Succeeded != 1 || out.Failed != 1 || out.StoppedAt != nil {
		t.Fatalf("counters: %+v", out)
	}
	if batchErrText(out.Results[0].Error) != "Unknown tool: 'missing_probe'" || out.Results[0].Success {
		t.Fatalf("row 0: %q", batchErrText(out.Results[0].Error))
	}
	if !out.Results[1].Success || out.Results[1].StructuredContent["session_name"] != "kept-going" {
		t.Fatalf("row 1: %+v", out.Results[1])
	}
}

func TestBatchSelfBoundedRefused(t *testing.T) {
	e := newEnv(t)
	for _, w := range []string{"call_readonly_tools_batch", "call_mutating_tools_batch", "call_destructive_tools_batch"} {
		for _, tool := range []string{"run_command", "wait_for_text", "wait_for_channel"} {
			out, _ := e.batch(w, "continue", batchOp(tool, map[string]any{"command": "true"}), batchOp("list_sessions", nil))
			want := "Tool '" + tool + "' enforces its own wait ceiling and cannot be batched; batching would multiply that ceiling by the operation count. Call it directly."
			if batchErrText(out.Results[0].Error) != want {
				t.Fatalf("%s/%s: %q", w, tool, batchErrText(out.Results[0].Error))
			}
			if !out.Results[1].Success || out.Failed != 1 || out.Succeeded != 1 {
				t.Fatalf("%s/%s: continue did not run the next operation: %+v", w, tool, out)
			}
		}
	}
}

func TestBatchHiddenToolIsUnknown(t *testing.T) {
	e := newEnv(t, withSettings(Settings{Safety: TierReadonly, SuppressHistory: true, WaitMax: 30}))
	out, _ := e.batch("call_readonly_tools_batch", "", batchOp("kill_server", nil))
	if batchErrText(out.Results[0].Error) != "Unknown tool: 'kill_server'" {
		t.Fatalf("hidden tool: %q", batchErrText(out.Results[0].Error))
	}
}

func TestBatchNestedErrorRow(t *testing.T) {
	e := newEnv(t)
	out, _ := e.batch("call_readonly_tools_batch", "", batchOp("get_pane_info", map[string]any{"pane_id": "%999"}), batchOp("list_sessions", nil))
	if len(out.Results) != 1 || *out.StoppedAt != 0 {
		t.Fatalf("stop mode: %+v", out)
	}
	r := out.Results[0]
	if r.Success || !strings.Contains(batchErrText(r.Error), "%999") || r.Meta["error_type"] == nil || r.Meta["expected"] != true || r.StructuredContent != nil {
		t.Fatalf("nested error row: %+v", r)
	}
	if len(r.Content) != 1 || r.Content[0]["text"] != batchErrText(r.Error) {
		t.Fatalf("nested error content %v vs error %q", r.Content, batchErrText(r.Error))
	}
	// Nested validation failures are rows too.
	out, _ = e.batch("call_readonly_tools_batch", "", batchOp("list_sessions", map[string]any{"bogus": 1}))
	if out.Results[0].Success || !strings.Contains(batchErrText(out.Results[0].Error), "Unexpected keyword argument") {
		t.Fatalf("nested validation: %q", batchErrText(out.Results[0].Error))
	}
}

func TestBatchWholeCallValidation(t *testing.T) {
	e := newEnv(t)
	ops := make([]any, 6000)
	for i := range ops {
		ops[i] = batchOp("missing_probe", nil)
	}
	res := e.call("call_readonly_tools_batch", map[string]any{"operations": ops, "on_error": "continue"})
	if !res.IsError || res.StructuredContent != nil || !strings.Contains(text(res), "operations must contain at most 1000 tool calls") {
		t.Fatalf("6000 operations: isError=%v structured=%v text=%q", res.IsError, res.StructuredContent, text(res))
	}
	if n := batchWireSize(t, res); n > responseLimitBytes {
		t.Fatalf("error envelope %d bytes", n)
	}
	e.fail("call_mutating_tools_batch", map[string]any{"operations": []any{}}, "operations must contain at least one tool call")
	e.fail("call_mutating_tools_batch", map[string]any{"operations": []any{batchOp("list_sessions", nil)}, "on_error": "later"}, "on_error")
}

// batchWireSize is the client-side envelope size the reference's test measures:
// content, structuredContent and isError, sorted keys, compact (ASCII
// payloads only, so Go's and Python's escaping agree).
func batchWireSize(t *testing.T, res *sdk.CallToolResult) int {
	t.Helper()
	var blocks []any
	for _, c := range res.Content {
		b, _ := json.Marshal(c)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		blocks = append(blocks, m)
	}
	env := map[string]any{"content": blocks, "structuredContent": res.StructuredContent, "isError": res.IsError}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(env); err != nil {
		t.Fatal(err)
	}
	return buf.Len() - 1
}

func TestBatchResponseCap(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	var panes []string
	for _, tag := range []string{"first", "second"} {
		var sb strings.Builder
		for i := 0; i < 4200; i++ {
			fmt.Fprintf(&sb, "%s-%04d-%s\n", tag, i, strings.Repeat("x", 58))
		}
		path := filepath.Join(dir, tag)
		if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		e.tmux("set-option", "-g", "history-limit", "10000")
		id := e.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "cat "+path+"; exec sleep 600")
		panes = append(panes, id)
		last := fmt.Sprintf("%s-4199-", tag)
		waitFor(t, tag+" output", func() bool {
			return strings.Contains(e.tmux("capture-pane", "-p", "-t", id), last)
		})
	}
	capture := func(id string) map[string]any {
		return batchOp("capture_pane", map[string]any{"pane_id": id, "start": -10000, "max_lines": nil})
	}
	out, res := e.batch("call_readonly_tools_batch", "", capture(panes[0]), capture(panes[1]))
	if res.IsError || out.Succeeded != 2 || out.Failed != 0 || out.StoppedAt != nil {
		t.Fatalf("counters: %+v", out)
	}
	if !out.ResponseTruncated || out.ResponseTruncatedBytes <= 0 {
		t.Fatalf("not truncated: truncated=%v bytes=%d", out.ResponseTruncated, out.ResponseTruncatedBytes)
	}
	for i, r := range out.Results {
		if !r.Success || r.StructuredContent != nil || len(r.Content) != 1 || r.Content[0]["text"] != tools.BatchTruncatedText || r.Content[0]["type"] != "text" {
			t.Fatalf("row %d: %+v", i, r)
		}
		if r.Meta == nil || r.Tool != "capture_pane" || r.Index != i {
			t.Fatalf("row %d lost its metadata: %+v", i, r)
		}
	}
	if n := batchWireSize(t, res); n > responseLimitBytes {
		t.Fatalf("envelope %d bytes", n)
	}
	if strings.Contains(text(res), "first-4199") || strings.Contains(text(res), "second-4199") {
		t.Fatal("payload survived truncation")
	}
}

func TestBatchAnnotations(t *testing.T) {
	e := newEnv(t)
	res, err := e.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		switch tl.Name {
		case "call_mutating_tools_batch", "call_destructive_tools_batch":
			a := tl.Annotations
			if a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint || a.IdempotentHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
				t.Errorf("%s annotations %+v", tl.Name, a)
			}
		case "call_readonly_tools_batch":
			if !tl.Annotations.ReadOnlyHint {
				t.Errorf("%s not read-only", tl.Name)
			}
		}
	}
}
