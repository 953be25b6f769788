package mcp

import (
	"strings"
	"testing"
)

func TestScrubSecrets(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
		text string
		gone []string // must not appear in the result
		keep []string // must still appear
	}{
		{"tmux echoes a value", map[string]any{"option": "status", "value": "S3CRET-opt-value"},
			"tmux error: unknown value: S3CRET-opt-value", []string{"S3CRET"}, []string{"unknown value: <redacted len=16 sha256="}},
		{"environment values", map[string]any{"environment": map[string]any{"TOKEN": "hunter2-token"}},
			"failed: TOKEN=hunter2-token", []string{"hunter2"}, []string{"TOKEN=<redacted"}},
		{"batch operations", map[string]any{"operations": []any{map[string]any{"tool": "set_option", "arguments": map[string]any{"value": "deep-secret"}}}},
			"op 0: unknown value: deep-secret", []string{"deep-secret"}, []string{"op 0"}},
		{"send_keys_batch keys", map[string]any{"operations": []any{map[string]any{"keys": "pa55word", "pane_id": "%1"}}},
			"x pa55word y", []string{"pa55word"}, []string{"x ", " y"}},
		{"short value only as a word", map[string]any{"value": "ab"},
			"unknown value: ab (table abc)", []string{": ab "}, []string{"table abc"}},
		{"non-sensitive untouched", map[string]any{"option": "status-left"},
			"invalid option: status-left", nil, []string{"status-left"}},
		{"longest first", map[string]any{"value": "secret", "keys": "secret-and-more"},
			"got secret-and-more", []string{"secret"}, []string{"<redacted len=15"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scrubSecrets(tt.args, tt.text)
			for _, g := range tt.gone {
				if strings.Contains(got, g) {
					t.Errorf("%q still contains %q", got, g)
				}
			}
			for _, k := range tt.keep {
				if !strings.Contains(got, k) {
					t.Errorf("%q lacks %q", got, k)
				}
			}
		})
	}
}
