package mcp

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/fleetmux/fleetmux/mcp/surface"
	"github.com/fleetmux/fleetmux/mcp/tools"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

// responseLimitBytes is the reference's response ceiling.
const responseLimitBytes = tools.ResponseLimitBytes

// buildResult encodes a tool's return value the way the reference's
// framework does: text tools and lists are wrapped in {"result": ...};
// models become structuredContent with their compact JSON as text.
func buildResult(ts *surface.Tool, out any) (*sdk.CallToolResult, error) {
	if ar, ok := out.(actionResult); ok {
		// A fan-out action: every host's outcome, and the grouped text
		// (also as "result" for a tool whose results are wrapped, which
		// its output schema requires).
		sc := pyfmt.NewOMap()
		if ts.Wrapped {
			sc.Set("result", ar.text)
		}
		sc.Set("hosts", ar.hosts).Set("summary", ar.summary)
		return &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: ar.text}},
			StructuredContent: json.RawMessage(pyfmt.Compact(sc)),
		}, nil
	}
	var failures []string
	if fr, ok := out.(fanoutResult); ok {
		out, failures = fr.value, fr.failures
	}
	res := &sdk.CallToolResult{Content: []sdk.Content{}}
	if ts.Wrapped {
		wrapped := pyfmt.NewOMap().Set("result", out)
		res.StructuredContent = json.RawMessage(pyfmt.Compact(wrapped))
		res.Meta = sdk.Meta{"fastmcp": map[string]any{"wrap_result": true}}
		switch v := out.(type) {
		case string:
			res.Content = append(res.Content, &sdk.TextContent{Text: v})
		default:
			text := pyfmt.Compact(v)
			if text != "[]" && text != "null" {
				res.Content = append(res.Content, &sdk.TextContent{Text: text})
			}
		}
	} else {
		text := pyfmt.Compact(out)
		res.StructuredContent = json.RawMessage(text)
		res.Content = append(res.Content, &sdk.TextContent{Text: text})
	}
	if failures != nil {
		if res.Meta == nil {
			res.Meta = sdk.Meta{}
		}
		res.Meta["fleetmux/failed_hosts"] = failures
		if len(failures) > 0 {
			res.Content = append(res.Content, &sdk.TextContent{Text: "hosts that failed: " + strings.Join(failures, "; ")})
		}
	}
	return res, nil
}

// errorResult renders an error as the reference's error result: one text
// block (message, then the suggestion on its own line) and _meta with
// error_type, expected and suggestion. No structuredContent.
func errorResult(err error) *sdk.CallToolResult {
	info := tools.DescribeError(err)
	text := info.Text
	meta := sdk.Meta{"error_type": info.Type, "expected": info.Expected}
	if info.Suggestion != "" {
		meta["suggestion"] = info.Suggestion
		text += "\n" + info.Suggestion
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}, Meta: meta}
}

// resultSize is the size of the complete result as JSON.
func resultSize(res *sdk.CallToolResult) int {
	b, err := json.Marshal(res)
	if err != nil {
		return 0
	}
	return len(b)
}

// limitResponse keeps a result under max bytes, preserving the tail of
// its text. Divergence: when the text alone fits but
// text plus structuredContent does not, the reference silently drops
// structuredContent; we instead shrink wrapped text results in both
// places so clients that check outputSchema still get valid results.
func limitResponse(res *sdk.CallToolResult, max int) *sdk.CallToolResult {
	if res == nil || resultSize(res) <= max {
		return res
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	joined := strings.Join(texts, "\n\n")
	meta := res.Meta
	if meta == nil {
		meta = sdk.Meta{}
	}
	// A wrapped text result (capture_pane): the structured copy doubles
	// the payload, so budget each copy at half.
	if _, wrapped := meta["fastmcp"]; wrapped && !res.IsError && len(texts) == 1 {
		budget := max/2 - 200
		text := tailTruncate(joined, budget)
		out := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, Meta: meta}
		out.StructuredContent = json.RawMessage(pyfmt.Compact(pyfmt.NewOMap().Set("result", text)))
		if resultSize(out) <= max {
			return out
		}
	}
	text := tailTruncate(joined, max)
	return &sdk.CallToolResult{IsError: res.IsError, Content: []sdk.Content{&sdk.TextContent{Text: text}}, Meta: meta}
}

// tailTruncate keeps the last bytes of s that fit max (minus the JSON
// overhead and the header) and prefixes "[... truncated N bytes ...]\n".
func tailTruncate(s string, max int) string {
	total := len(s)
	header := "[... truncated " + itoa(total) + " bytes ...]\n"
	keep := max - 50 - len(header)
	if keep <= 0 {
		return strings.TrimSuffix("[... truncated "+itoa(total)+" bytes ...]\n", "\n")
	}
	if keep >= total {
		return s
	}
	tail := s[total-keep:]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	dropped := total - len(tail)
	return "[... truncated " + itoa(dropped) + " bytes ...]\n" + tail
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
