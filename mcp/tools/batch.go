package tools

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetmux/fleetmux/fleet/vocab"
	"github.com/fleetmux/fleetmux/mcp/surface"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

// Generic batch wrappers: nested tool calls run one
// after another through the full pipeline, each producing one row.

// maxBatchOperations caps the operations of one batch call.
const maxBatchOperations = 1000

// BatchTruncatedText replaces nested payloads when the batch envelope is
// over the response limit.
const BatchTruncatedText = "[... batch truncated nested content ...]"

var batchToolNames = map[string]bool{
	"call_readonly_tools_batch":    true,
	"call_mutating_tools_batch":    true,
	"call_destructive_tools_batch": true,
}

// toolsBatchArgs are the arguments of the call_*_tools_batch tools.
type toolsBatchArgs struct {
	Operations any
	OnError    *string
}

// batchHandler is the handler of the batch tool that runs operations up
// to maxTier.
func batchHandler(maxTier Tier) Handler {
	return typed(func(ctx context.Context, c *Call, a toolsBatchArgs) (any, error) {
		ops, _ := a.Operations.([]any)
		if len(ops) == 0 {
			return nil, Expectedf("operations must contain at least one tool call")
		}
		if len(ops) > maxBatchOperations {
			return nil, Expectedf("operations must contain at most %d tool calls", maxBatchOperations)
		}
		onError := "stop"
		if a.OnError != nil {
			onError = *a.OnError
		}
		if onError != "stop" && onError != "continue" {
			return nil, Expectedf("on_error must be 'stop' or 'continue'")
		}
		res := ToolCallBatchResult{Results: []ToolCallOperationResult{}}
		for i, op := range ops {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			m, _ := op.(map[string]any)
			name, _ := m["tool"].(string)
			args, _ := m["arguments"].(map[string]any)
			row := batchOne(c, ctx, i, name, args, maxTier)
			res.Results = append(res.Results, row)
			if row.Success {
				res.Succeeded++
			} else {
				res.Failed++
				if onError == "stop" {
					idx := i
					res.StoppedAt = &idx
					break
				}
			}
		}
		limitBatch(&res, ResponseLimitBytes)
		return res, nil
	})
}

// ResponseLimitBytes is the reference's response ceiling.
const ResponseLimitBytes = 1000000

// batchOne pre-checks one operation and runs it; failures become rows.
func batchOne(c *Call, ctx context.Context, index int, name string, args map[string]any, maxTier Tier) ToolCallOperationResult {
	start := time.Now()
	row := ToolCallOperationResult{Index: index, Tool: name, Content: []any{}}
	opArgs := batchArgs(c, name, args)
	if err := batchCheck(c, name, maxTier); err != nil {
		// The refused operation has its own audit record (parent: the
		// batch), as the same refusal made directly has.
		c.deps.AuditRefused(ctx, name, opArgs, start, err)
		msg := err.Msg
		row.Error = &msg
		row.ElapsedSeconds = PyFloat(time.Since(start).Seconds())
		return row
	}
	res := c.deps.CallTool(ctx, name, opArgs)
	row.Success = !res.IsError
	for _, blk := range res.Content {
		if v := OrderedJSON(blk); v != nil {
			row.Content = append(row.Content, v)
		}
	}
	if res.StructuredContent != nil {
		row.StructuredContent = OrderedJSON(res.StructuredContent)
	}
	if res.Meta != nil {
		row.Meta = OrderedJSON(res.Meta)
	}
	if res.IsError {
		var texts []string
		for _, blk := range res.Content {
			if tc, ok := blk.(*sdk.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		msg := "Tool call returned an error result."
		if len(texts) > 0 {
			msg = strings.Join(texts, "\n")
		}
		row.Error = &msg
	}
	row.ElapsedSeconds = PyFloat(time.Since(start).Seconds())
	return row
}

// batchArgs is what one operation runs with: its own arguments, and in
// fleet mode the batch's host when the operation names none, so that a
// batch on h1 acts on h1. An operation that names a host of its own runs
// there; dispatch puts it through that host's gate and --host-safety cap
// like any call. The operation's map is never changed.
func batchArgs(c *Call, name string, args map[string]any) map[string]any {
	out := make(map[string]any, len(args)+1)
	maps.Copy(out, args)
	if !c.env.Backend.Fleet() {
		return out
	}
	info, ok := c.deps.LookupTool(name)
	if !ok {
		return out
	}
	if info.Spec.NoHostParam {
		// Tools that are not per host take the batch's host only where
		// "host" is a filter of their own (list_jobs): the batch's rows
		// then speak of its host, as a direct call with that host does.
		own := false
		for _, p := range info.Spec.Params {
			own = own || p.Name == "host"
		}
		if !own {
			return out
		}
	}
	if h, ok := out["host"]; !ok || h == nil {
		out["host"] = c.Host
	}
	return out
}

// batchCheck returns the refusal of an operation the wrapper must not
// run, or nil (checks in the reference's order). An unknown tool is an
// error, as it is when called directly; the others are refusals.
func batchCheck(c *Call, name string, maxTier Tier) *ToolError {
	if batchToolNames[name] {
		return Refusedf("Batch tools cannot call batch tools recursively.")
	}
	info, ok := c.deps.LookupTool(name)
	if !ok || !info.Visible {
		return &ToolError{Msg: "Unknown tool: " + pyfmt.Repr(name), Class: "NotFoundError"}
	}
	if info.SelfBounded {
		return Refusedf("Tool %s enforces its own wait ceiling and cannot be batched; batching would multiply that ceiling by the operation count. Call it directly.", pyfmt.Repr(name))
	}
	if ts := surface.ToolByName(name); ts != nil {
		if _, ok := vocab.ParseTier(ts.Tier); !ok {
			return Refusedf("Tool %s has no recognized safety tier tag.", pyfmt.Repr(name))
		}
	}
	if info.Tier > maxTier {
		return Refusedf("Tool %s has tier %s, which exceeds batch tier %s.", pyfmt.Repr(name), pyfmt.Repr(info.Tier.String()), maxTier.String())
	}
	return nil
}

// OrderedJSON re-reads a value as JSON keeping object key order (nil when
// it cannot be encoded).
func OrderedJSON(v any) any {
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		b = x
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil
		}
	}
	out, err := pyfmt.DecodeOrdered(b)
	if err != nil {
		return nil
	}
	return out
}

// limitBatch elides nested payloads, row by row, until the batch's
// response envelope fits max bytes (the reference server's response cap).
// The envelope size is that of
// {"content":[{"type":"text","text":T}],"structuredContent":S,"isError":false}
// serialised compactly with sorted keys and ASCII escapes, where T is the
// result's JSON text and S the same value.
func limitBatch(res *ToolCallBatchResult, max int) {
	costs := make([]int, len(res.Results))
	for i := range res.Results {
		costs[i] = batchRowCost(&res.Results[i])
	}
	size := func() int {
		n := batchBaseSize(res)
		for _, c := range costs {
			n += c
		}
		if len(costs) > 1 {
			n += 2 * (len(costs) - 1) // the commas between rows, in T and in S
		}
		return n
	}
	if size() <= max {
		return
	}
	res.ResponseTruncated = true
	dropped := 0
	for i := range res.Results {
		row := &res.Results[i]
		if len(row.Content) == 0 && row.StructuredContent == nil {
			continue
		}
		before := costs[i]
		row.Content = []any{pyfmt.NewOMap().Set("type", "text").Set("text", BatchTruncatedText)}
		row.StructuredContent = nil
		costs[i] = batchRowCost(row)
		if d := before - costs[i]; d > 0 {
			dropped += d
		}
		res.ResponseTruncatedBytes = dropped
		if size() <= max {
			break
		}
	}
}

// batchBaseSize is the envelope size of res without its rows.
func batchBaseSize(res *ToolCallBatchResult) int {
	head := *res
	head.Results = []ToolCallOperationResult{}
	return batchEnvelopeSize(pyfmt.Compact(head))
}

// batchRowCost is what one row adds to the envelope: its JSON text
// escaped inside T plus its sorted form inside S.
func batchRowCost(row *ToolCallOperationResult) int {
	text := pyfmt.Compact(row)
	return pyStrLen(text) - 2 + sortedJSONLen(text)
}

// batchEnvelopeSize is the size of the sorted, compact, ASCII-escaped envelope
// carrying text both as a text block and as structured content.
func batchEnvelopeSize(text string) int {
	return len(`{"content":[{"text":`) + pyStrLen(text) + len(`,"type":"text"}],"isError":false,"structuredContent":`) + sortedJSONLen(text) + len(`}`)
}

// sortedJSONLen is the length of Python's json.dumps(json.loads(text),
// separators=(",", ":"), sort_keys=True).
func sortedJSONLen(text string) int {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return len(text)
	}
	return pyValueLen(v)
}

func pyValueLen(v any) int {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		if x {
			return 4
		}
		return 5
	case json.Number:
		return len(x)
	case string:
		return pyStrLen(x)
	case []any:
		n := 2
		for i, e := range x {
			if i > 0 {
				n++
			}
			n += pyValueLen(e)
		}
		return n
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		n := 2
		for i, k := range keys {
			if i > 0 {
				n++
			}
			n += pyStrLen(k) + 1 + pyValueLen(x[k])
		}
		return n
	}
	return len(pyfmt.Compact(v))
}

// pyStrLen is the length of s as a JSON string literal written by
// Python's json.dumps with ensure_ascii (quotes included).
func pyStrLen(s string) int {
	n := 2
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
			n += 2
		case r < 0x20 || r == 0x7f:
			n += 6
		case r < 0x7f:
			n++
		case r > 0xffff:
			n += 12
		default:
			n += 6
		}
	}
	return n
}
