package mcp

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"crypto/sha256"
)

// minScrubSubstring is the shortest sensitive value replaced wherever it
// occurs in an error text; shorter ones are replaced only where they stand
// as a whole word, so a one-letter key does not mangle every message.
const minScrubSubstring = 4

// scrubSecrets replaces, in text, every sensitive argument value of a
// call (the values Redact digests: keys, text, command, value, content,
// shell, environment values, also inside batch operations) with a short
// digest "<redacted len=N sha256=PREFIX>". tmux repeats a bad value in
// its error ("unknown value: S3CRET"), and error texts are stored in the
// audit and logged; the digest keeps them comparable without the secret.
func scrubSecrets(args map[string]any, text string) string {
	if text == "" || len(args) == 0 {
		return text
	}
	var vals []string
	collectSecrets(args, 0, &vals)
	if len(vals) == 0 {
		return text
	}
	// Longest first, so a value containing another is replaced whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	for _, v := range vals {
		if v == "" || !strings.Contains(text, v) {
			continue
		}
		text = replaceSecret(text, v, secretToken(v))
	}
	return text
}

func secretToken(v string) string {
	sum := sha256.Sum256([]byte(v))
	return fmt.Sprintf("<redacted len=%d sha256=%s>", utf8.RuneCountInString(v), hex.EncodeToString(sum[:])[:12])
}

// replaceSecret replaces v in text: everywhere when v is long enough,
// else only where it is not part of a longer word.
func replaceSecret(text, v, token string) string {
	if len(v) >= minScrubSubstring {
		return strings.ReplaceAll(text, v, token)
	}
	var b strings.Builder
	for {
		i := strings.Index(text, v)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[i+len(v):])
		word := func(r rune) bool {
			return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
		}
		if (i > 0 && word(before)) || (i+len(v) < len(text) && word(after)) {
			b.WriteString(text[:i+len(v)])
		} else {
			b.WriteString(text[:i])
			b.WriteString(token)
		}
		text = text[i+len(v):]
	}
}

// collectSecrets gathers the string values Redact would digest.
func collectSecrets(args map[string]any, depth int, out *[]string) {
	if depth > maxRedactDepth {
		return
	}
	for k, v := range args {
		switch {
		case sensitiveArgNames[k]:
			collectValues(v, depth+1, out)
		case k == "operations" || k == "arguments":
			collectNested(v, depth+1, out)
		}
	}
}

// collectValues gathers every string (and Python str() of scalars in
// objects) under a sensitive argument.
func collectValues(v any, depth int, out *[]string) {
	if depth > maxRedactDepth {
		return
	}
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case map[string]any:
		for _, e := range x {
			collectValues(e, depth+1, out)
		}
	case []any:
		for _, e := range x {
			collectValues(e, depth+1, out)
		}
	}
}

// collectNested looks into batch operations and their arguments.
func collectNested(v any, depth int, out *[]string) {
	if depth > maxRedactDepth {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		collectSecrets(x, depth+1, out)
	case []any:
		for _, e := range x {
			collectNested(e, depth+1, out)
		}
	}
}
