package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

// minScrubSubstring is the shortest sensitive value replaced wherever it
// occurs in an error text; shorter ones are replaced only where they stand
// as a whole word, so a one-letter key does not mangle every message.
const minScrubSubstring = 4

// Scrub replaces, in text, every sensitive argument value of a
// call (the values Redact digests: keys, text, command, value, content,
// shell, environment values, also inside batch operations) with a short
// digest "<redacted len=N sha256=PREFIX>". tmux repeats a bad value in
// its error ("unknown value: S3CRET"), and error texts are stored in the
// audit and logged; the digest keeps them comparable without the secret.
func Scrub(args map[string]any, text string) string {
	if text == "" || len(args) == 0 {
		return text
	}
	var vals []string
	collectSecrets(args, 0, &vals)
	if len(vals) == 0 {
		return text
	}
	// Every form a value may be echoed in, each replaced by the token of
	// the value it came from; longest first, so a form containing another
	// is replaced whole.
	type form struct{ text, token string }
	var forms []form
	seen := map[string]bool{}
	for _, v := range vals {
		token := ""
		for _, f := range echoForms(v) {
			if seen[f] {
				continue
			}
			seen[f] = true
			if token == "" {
				token = secretToken(v)
			}
			forms = append(forms, form{f, token})
		}
	}
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i].text) > len(forms[j].text) })
	for _, f := range forms {
		if strings.Contains(text, f.text) {
			text = replaceSecret(text, f.text, f.token)
		}
	}
	return text
}

// maxEchoLines bounds how many lines of one value get forms of their own
// (a pasted file); the value whole and trimmed is always covered.
const maxEchoLines = 1000

// echoForms returns the texts under which an error may repeat the value v:
// v itself; trimmed (tmux's stderr and fleetmux's error texts lose
// leading and trailing whitespace and newlines); each line, whole and
// trimmed (an error keeps one line, the log keeps the first); and each of
// those as Go, JSON and Python quoting and tmux's escaping of control
// characters print them, without the quotes (an argv or a list of stderr
// lines in an error), and with non-ASCII shown as '_' (tmux without a
// UTF-8 locale). Forms that are empty or only whitespace are left out.
func echoForms(v string) []string {
	bases := []string{v, pyfmt.Strip(v), strings.TrimRight(v, "\r\n")}
	if strings.ContainsAny(v, "\r\n") {
		lines := strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' })
		if len(lines) > maxEchoLines {
			lines = lines[:maxEchoLines]
		}
		for _, l := range lines {
			bases = append(bases, l, pyfmt.Strip(l))
		}
	}
	var out []string
	add := func(s string) {
		if strings.TrimFunc(s, pyfmt.IsSpace) != "" {
			out = append(out, s)
		}
	}
	for _, b := range bases {
		add(b)
		add(unquote(strconv.Quote(b)))
		add(unquote(strconv.QuoteToASCII(b)))
		add(unquote(pyfmt.Repr(b)))
		add(unquote(pyfmt.JSONQuote(b)))
		if j, err := pyfmt.MarshalNoEscape(b); err == nil {
			add(unquote(string(j)))
		}
		add(visOctal(b))
		add(strings.Map(func(r rune) rune {
			if r > unicode.MaxASCII {
				return '_'
			}
			return r
		}, b))
	}
	return out
}

// unquote drops the first and last byte of a quoted form.
func unquote(q string) string {
	if len(q) < 2 {
		return q
	}
	return q[1 : len(q)-1]
}

// visOctal writes control characters, DEL and backslash as vis(3) does
// in tmux's octal style (\001, \177, \\).
func visOctal(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\%03o`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
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
