package tmux

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// What a caller-supplied format may contain.
//
// tmux expands formats in more places than display-message: names given
// to new-session -s/-n, new-window -n, rename-session, rename-window,
// titles (select-pane -T), start directories (-c) and option and hook
// names (show-options, set-option, show-hooks, set-hook). An expansion can
// start a shell command: "#(cmd)" does directly, and modifiers that
// expand their result again (E:, T:) can build "#(" out of pieces that
// never contain it ("#{E:#{a:35}(cmd)}", where a:35 is "#"). Searching a
// string for what is bad cannot work, so fleetmux states what is allowed:
//
//   - CheckFormat accepts a small grammar for formats that a caller wants
//     tmux to evaluate (display_message);
//   - EscapeLiteral makes any text mean itself where tmux expands an
//     argument that the caller meant literally (names, titles,
//     directories);
//   - CheckName refuses '#' in option and hook names, where no legitimate
//     name has one.

// ErrFormatNotAllowed reports a format (or name) that fleetmux refuses
// to hand to tmux.
var ErrFormatNotAllowed = errors.New("format not allowed")

// Limits of CheckFormat.
const (
	// MaxFormatLen bounds a format's length in bytes.
	MaxFormatLen = 1024
	// MaxFormatWidth bounds the N of the pad (pN) and trim (=N) modifiers.
	MaxFormatWidth = 500
	// maxFormatDepth bounds the nesting of conditionals and comparisons.
	maxFormatDepth = 8
)

// formatAliases are tmux's one-letter variable aliases (#S is
// #{session_name} and so on).
const formatAliases = "DFHIPSTWh"

// FormatError says what CheckFormat refused and where.
type FormatError struct {
	Offset int    // byte offset in the format
	Reason string // what is not allowed there
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%v at byte %d: %s", ErrFormatNotAllowed, e.Offset, e.Reason)
}

func (e *FormatError) Unwrap() error { return ErrFormatNotAllowed }

// CheckFormat reports whether tmux may evaluate format on a caller's
// behalf. It accepts:
//
//   - literal text, and the escapes "##", "#,", "#}" and "#[" (style);
//   - the one-letter aliases #D #F #H #I #P #S #T #W #h;
//   - #{name}: a variable (letters, digits, '_', '-', and a leading '@'
//     for user options);
//   - #{M:name} with modifiers M from b d q n w t, =N, =-N, pN, p-N
//     (|N| <= MaxFormatWidth), several joined by ';';
//   - #{?C,A,B}: a conditional on a variable or a format C;
//   - #{OP:A,B} with OP one of == != < > <= >= || &&;
//
// where A and B are again formats of this grammar (nested at most
// maxFormatDepth deep). Everything else is refused, in particular "#(",
// the modifiers that expand their result again (E, T), loops (S, W, P,
// L), l, a, s/…/…/, C, N, R, e|…| and m, and any format longer than
// MaxFormatLen bytes.
func CheckFormat(format string) error {
	if len(format) > MaxFormatLen {
		return &FormatError{Offset: MaxFormatLen, Reason: fmt.Sprintf("the format is %d bytes long; at most %d are allowed", len(format), MaxFormatLen)}
	}
	if i := strings.IndexByte(format, 0); i >= 0 {
		return &FormatError{Offset: i, Reason: "NUL byte"}
	}
	p := formatParser{s: format}
	end, err := p.text(0, 0, "")
	if err != nil {
		return err
	}
	if end != len(format) {
		return &FormatError{Offset: end, Reason: "unexpected character"}
	}
	return nil
}

type formatParser struct{ s string }

func (p *formatParser) fail(at int, format string, a ...any) error {
	return &FormatError{Offset: at, Reason: fmt.Sprintf(format, a...)}
}

// text parses literal text and references from i until a byte of stops
// (outside any reference) or the end; it returns where it stopped.
func (p *formatParser) text(i, depth int, stops string) (int, error) {
	for i < len(p.s) {
		c := p.s[i]
		if stops != "" && strings.IndexByte(stops, c) >= 0 {
			return i, nil
		}
		if c != '#' {
			i++
			continue
		}
		if i+1 >= len(p.s) {
			return i, p.fail(i, "a lone '#' at the end (write ## for a literal #)")
		}
		switch n := p.s[i+1]; {
		case n == '#' || n == ',' || n == '}' || n == '[':
			i += 2
		case strings.IndexByte(formatAliases, n) >= 0:
			i += 2
		case n == '{':
			j, err := p.ref(i, depth)
			if err != nil {
				return j, err
			}
			i = j
		case n == '(':
			return i, p.fail(i, "shell commands (#(...)) are not allowed")
		default:
			return i, p.fail(i, "'#%c' is not allowed (write ## for a literal #)", n)
		}
	}
	return i, nil
}

// ref parses a reference "#{...}" starting at i (at the '#') and returns
// the index after its closing brace.
func (p *formatParser) ref(i, depth int) (int, error) {
	if depth >= maxFormatDepth {
		return i, p.fail(i, "formats nested more than %d deep", maxFormatDepth)
	}
	start := i
	i += 2 // "#{"
	if i < len(p.s) && p.s[i] == '?' {
		// #{?COND,A,B}: COND is a variable name or a format of this
		// grammar (tmux expands it when it holds "#{").
		j, err := p.text(i+1, depth+1, ",}")
		if err != nil {
			return j, err
		}
		if j == i+1 {
			return j, p.fail(j, "empty condition in the conditional at byte %d", start)
		}
		return p.operands(start, j, depth, 2, true)
	}
	for _, op := range []string{"==:", "!=:", "<=:", ">=:", "<:", ">:", "||:", "&&:"} {
		if strings.HasPrefix(p.s[i:], op) {
			return p.operands(start, i+len(op)-1, depth, 2, false)
		}
	}
	// [modifiers:]name
	colon := -1
	for j := i; j < len(p.s) && p.s[j] != '}'; j++ {
		if p.s[j] == ':' {
			colon = j
			break
		}
		if p.s[j] == '#' || p.s[j] == '{' || p.s[j] == ',' {
			break
		}
	}
	if colon >= 0 {
		if err := p.modifiers(i, colon); err != nil {
			return i, err
		}
		i = colon + 1
	}
	j, err := p.name(i)
	if err != nil {
		return j, err
	}
	if j >= len(p.s) || p.s[j] != '}' {
		return j, p.fail(j, "expected '}' to close the reference opened at byte %d (only plain variable names may follow the modifiers)", start)
	}
	return j + 1, nil
}

// operands parses n comma-separated formats after position i (which
// holds the ',' or ':' that introduces them) up to the closing brace.
func (p *formatParser) operands(start, i, depth, n int, cond bool) (int, error) {
	if cond {
		if i >= len(p.s) || p.s[i] != ',' {
			return i, p.fail(i, "expected ',' after the condition of the conditional at byte %d", start)
		}
	}
	for k := 0; k < n; k++ {
		j, err := p.text(i+1, depth+1, ",}")
		if err != nil {
			return j, err
		}
		want := byte(',')
		if k == n-1 {
			want = '}'
		}
		if j >= len(p.s) || p.s[j] != want {
			return j, p.fail(j, "expected '%c' in the reference opened at byte %d", want, start)
		}
		i = j
	}
	return i + 1, nil
}

// name parses a variable name at i and returns where it ends.
func (p *formatParser) name(i int) (int, error) {
	j := i
	if j < len(p.s) && p.s[j] == '@' {
		j++
	}
	for j < len(p.s) {
		c := p.s[j]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			j++
			continue
		}
		break
	}
	if j == i || (p.s[i] == '@' && j == i+1) {
		return j, p.fail(i, "expected a variable name such as pane_id")
	}
	return j, nil
}

// modifiers checks the modifier list s[i:colon].
func (p *formatParser) modifiers(i, colon int) error {
	at := i
	for _, m := range strings.Split(p.s[i:colon], ";") {
		if err := checkModifier(m); err != nil {
			return p.fail(at, "%v", err)
		}
		at += len(m) + 1
	}
	return nil
}

func checkModifier(m string) error {
	switch m {
	case "b", "d", "q", "n", "w", "t":
		return nil
	}
	if len(m) > 1 && (m[0] == '=' || m[0] == 'p') {
		n := m[1:]
		if n[0] == '-' {
			n = n[1:]
		}
		v, err := strconv.Atoi(n)
		if err != nil || n == "" || n[0] == '+' {
			return fmt.Errorf("modifier %q needs a number", m)
		}
		if v > MaxFormatWidth {
			return fmt.Errorf("modifier %q: at most %d is allowed", m, MaxFormatWidth)
		}
		return nil
	}
	if m == "" {
		return errors.New("empty modifier")
	}
	return fmt.Errorf("modifier %q is not allowed", m)
}

// EscapeLiteral returns s with every '#' doubled, so that where tmux
// expands an argument as a format (names, titles, start directories) the
// result is s itself and nothing in it is evaluated.
func EscapeLiteral(s string) string {
	return strings.ReplaceAll(s, "#", "##")
}

// CheckName refuses an option or hook name that contains '#': tmux
// expands those names as formats, and no real name has one.
func CheckName(kind, name string) error {
	if i := strings.IndexByte(name, '#'); i >= 0 {
		return fmt.Errorf("%w: %s names cannot contain '#' (byte %d)", ErrFormatNotAllowed, kind, i)
	}
	return nil
}
