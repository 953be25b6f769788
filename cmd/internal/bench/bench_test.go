package bench

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestBenchErrorText(t *testing.T) {
	r := &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "ssh dev-1: connect refused\nsecond line"}}}
	if got := benchErrorText(r); got != "ssh dev-1: connect refused second line" {
		t.Errorf("got %q", got)
	}
	if got := benchErrorText(&sdk.CallToolResult{IsError: true}); got == "" || strings.Contains(got, "0x") {
		t.Errorf("empty result: %q", got)
	}
}
