package redact

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
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
			got := Scrub(tt.args, tt.text)
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

// TestScrubSecretsGenerative: a seeded generator builds secrets of many
// shapes (leading and trailing whitespace, newlines, CRLF, tabs, quotes,
// backslashes, control characters, unicode, long values), puts each under
// every sensitive argument (also inside batch operations), and echoes it in
// every form an error may carry it (whole, trimmed, first line, each line,
// Go/JSON/Python quoting, a Python list of stderr lines, tmux's octal
// escapes). The secret's words are random alphanumeric markers: whatever
// the escaping, none may survive scrubbing.
func TestScrubSecretsGenerative(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 4))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	marker := func() string {
		b := make([]byte, 8+rng.IntN(8))
		for i := range b {
			b[i] = alnum[rng.IntN(len(alnum))]
		}
		return string(b)
	}
	seps := []string{"-", " ", "\t", "\n", "\r\n", `"`, "'", `\`, "ü", "🔑", "\x01", "\x7f", "=", "$(", "\u00a0"}
	pads := []string{"", "", " ", "  ", "\n", "\r\n", "\t", " \n", "\n\n", "\u3000"}
	wrap := func(secret string) []map[string]any {
		return []map[string]any{
			{"option": "status", "value": secret},
			{"keys": secret, "pane_id": "%1"},
			{"text": secret},
			{"content": secret},
			{"command": secret},
			{"shell": secret},
			{"environment": map[string]any{"TOKEN": secret}},
			{"operations": []any{map[string]any{"tool": "set_option", "arguments": map[string]any{"option": "status", "value": secret}}}},
			{"operations": []any{map[string]any{"keys": secret, "pane_id": "%1"}}},
		}
	}
	lines := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	}
	forms := map[string]func(string) string{
		"raw":        func(s string) string { return s },
		"trimmed":    strings.TrimSpace,
		"rtrim-nl":   func(s string) string { return strings.TrimRight(s, "\r\n") },
		"first line": func(s string) string { return strings.TrimSpace(firstLine(strings.TrimLeft(s, " \t\r\n"))) },
		"each line":  func(s string) string { return strings.Join(lines(s), " | ") },
		"go quote":   func(s string) string { return fmt.Sprintf("%q", strings.TrimSpace(s)) },
		"go argv":    func(s string) string { return fmt.Sprintf("%q", []string{"tmux", "set-option", "status", s}) },
		"py repr":    func(s string) string { return pyfmt.Repr(strings.TrimSpace(s)) },
		"py list":    func(s string) string { return pyfmt.List(lines(s)) },
		"json":       func(s string) string { return pyfmt.JSONQuote(strings.TrimSpace(s)) },
		"tmux vis":   func(s string) string { return visOctal(strings.TrimSpace(s)) },
	}
	for i := 0; i < 200; i++ {
		var words []string
		var b strings.Builder
		b.WriteString(pads[rng.IntN(len(pads))])
		n := 1 + rng.IntN(5)
		if i%50 == 0 {
			n = 200 // a long value
		}
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			w := marker()
			words = append(words, w)
			b.WriteString(w)
		}
		b.WriteString(pads[rng.IntN(len(pads))])
		secret := b.String()
		for _, args := range wrap(secret) {
			for name, form := range forms {
				text := "tmux error: unknown value: " + form(secret) + "\ndone"
				got := Scrub(args, text)
				for _, w := range words {
					if strings.Contains(got, w) {
						t.Fatalf("secret %q under %v, form %s: %q survives in %q", secret, keysOf(args), name, w, got)
					}
				}
				if !strings.HasPrefix(got, "tmux error: unknown value:") || !strings.HasSuffix(got, "done") {
					t.Fatalf("form %s: the text around the secret was lost: %q", name, got)
				}
			}
		}
	}
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// firstLine is the line of an error text the server's WARN log shows.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
