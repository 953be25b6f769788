package tools

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

func TestBatchEnvelopeSizeMatchesDirectComputation(t *testing.T) {
	mk := func(i int, payload string) ToolCallOperationResult {
		return ToolCallOperationResult{
			Index: i, Tool: "capture_pane", Success: true, ElapsedSeconds: 0.00123,
			Content:           []any{pyfmt.NewOMap().Set("type", "text").Set("text", payload)},
			StructuredContent: pyfmt.NewOMap().Set("result", payload),
			Meta:              pyfmt.NewOMap().Set("fastmcp", pyfmt.NewOMap().Set("wrap_result", true)),
		}
	}
	msg := "Unknown tool: 'x'"
	cases := [][]ToolCallOperationResult{
		{},
		{mk(0, "plain")},
		{mk(0, "é \"quoted\" \\ tab\t nl\n ctl\x01 emoji 😀 del\x7f"), {Index: 1, Tool: "x", Error: &msg, Content: []any{}}},
		{mk(0, strings.Repeat("ü", 50)), mk(1, "b"), mk(2, "<>&")},
	}
	for i, rows := range cases {
		res := &ToolCallBatchResult{Results: rows, Succeeded: len(rows)}
		want := batchDirectEnvelopeSize(res)
		got := batchBaseSize(res)
		for j := range rows {
			got += batchRowCost(&rows[j])
		}
		if len(rows) > 1 {
			got += 2 * (len(rows) - 1)
		}
		if got != want {
			t.Errorf("case %d: incremental size %d, direct %d", i, got, want)
		}
	}
	// limitBatch: elides rows in order until the direct size fits.
	big := strings.Repeat("a", 3000)
	res := &ToolCallBatchResult{Results: []ToolCallOperationResult{mk(0, big), mk(1, big), mk(2, "small")}, Succeeded: 3}
	full := batchDirectEnvelopeSize(res)
	limit := full - 100
	limitBatch(res, limit)
	if !res.ResponseTruncated || res.Results[0].StructuredContent != nil || res.Results[1].StructuredContent == nil {
		t.Fatalf("limitBatch elided the wrong rows: %+v", res)
	}
	if n := batchDirectEnvelopeSize(res); n > limit {
		t.Fatalf("after limitBatch %d > %d", n, limit)
	}
	if res.ResponseTruncatedBytes <= 0 {
		t.Fatalf("dropped bytes %d", res.ResponseTruncatedBytes)
	}
}

func batchDirectEnvelopeSize(res *ToolCallBatchResult) int {
	textJSON := pyfmt.Compact(res)
	dec := json.NewDecoder(strings.NewReader(textJSON))
	dec.UseNumber()
	var s any
	_ = dec.Decode(&s)
	env := map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": textJSON}},
		"structuredContent": s,
		"isError":           false,
	}
	return len(batchPyDumpsSorted(env))
}

// batchPyDumpsSorted is a direct transcription of json.dumps(v,
// separators=(",", ":"), sort_keys=True) for decoded JSON values.
func batchPyDumpsSorted(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case json.Number:
		return string(x)
	case string:
		return pyfmt.JSONQuote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = batchPyDumpsSorted(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = pyfmt.JSONQuote(k) + ":" + batchPyDumpsSorted(x[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	panic(fmt.Sprintf("unexpected %T", v))
}
