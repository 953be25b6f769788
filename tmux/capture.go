package tmux

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PaneStateFormat reads, in one display-message round trip, what the
// incremental readers need to place the cursor on tmux's absolute grid
// and to notice a pane that died or was respawned.
const PaneStateFormat = "#{history_size}|#{cursor_y}|#{pane_height}|#{pane_pid}|#{pane_dead}|#{alternate_on}"

// HistoryLimitFormat reads a pane's history-limit.
const HistoryLimitFormat = "#{history_limit}"

// PaneState is one parsed PaneStateFormat reply. HistorySize+CursorY is
// the absolute row of the cursor.
type PaneState struct {
	HistorySize int
	CursorY     int
	PaneHeight  int
	PanePid     string
	Dead        bool
	AlternateOn bool
}

// AbsCursor is the cursor's absolute grid row.
func (s PaneState) AbsCursor() int { return s.HistorySize + s.CursorY }

// ParseError is a field of a tmux reply that is not what the format
// promised. Value is the offending text.
type ParseError struct {
	Value string
	// Unpack is set when the reply had too few fields; Got counts them.
	Unpack bool
	Got    int
}

func (e *ParseError) Error() string {
	if e.Unpack {
		return fmt.Sprintf("not enough values to unpack (expected 5, got %d)", e.Got)
	}
	return fmt.Sprintf("invalid literal for int() with base 10: %q", e.Value)
}

// PaneStateOf parses the lines a PaneStateFormat read printed; no line
// (a pane that vanished between commands) reads as all zeros.
func PaneStateOf(lines []string) (PaneState, error) {
	if len(lines) == 0 {
		return ParsePaneState("0|0|0||0|0")
	}
	return ParsePaneState(lines[0])
}

// ParsePaneState parses a PaneStateFormat reply. The pid field may
// contain anything; a missing alternate_on field (older tmux) means off.
func ParsePaneState(raw string) (PaneState, error) {
	parts := strings.SplitN(raw, "|", 6)
	if len(parts) < 5 {
		return PaneState{}, &ParseError{Unpack: true, Got: len(parts)}
	}
	var nums [3]int
	for i := range nums {
		n, err := ParseInt(parts[i])
		if err != nil {
			return PaneState{}, err
		}
		nums[i] = n
	}
	st := PaneState{
		HistorySize: nums[0], CursorY: nums[1], PaneHeight: nums[2],
		PanePid: parts[3], Dead: parts[4] == "1",
	}
	if len(parts) > 5 {
		st.AlternateOn = parts[5] == "1"
	}
	return st, nil
}

var pyIntRE = regexp.MustCompile(`^[+-]?[0-9]+(?:_[0-9]+)*$`)

// ParseInt parses a decimal integer with the leniency of Python's int():
// surrounding whitespace, a sign and digit-group underscores are allowed.
func ParseInt(s string) (int, error) {
	t := strings.TrimSpace(s)
	if !pyIntRE.MatchString(t) {
		return 0, &ParseError{Value: s}
	}
	n, err := strconv.Atoi(strings.ReplaceAll(t, "_", ""))
	if err != nil {
		return 0, &ParseError{Value: s}
	}
	return n, nil
}

// CaptureArgs builds a capture-pane argv printing rows of target to
// stdout. start and end are -S/-E values ("" = tmux's default, "-" =
// the start of history); join adds -J (wrapped rows joined).
func CaptureArgs(target, start, end string, join bool) []string {
	args := []string{"capture-pane", "-p"}
	if join {
		args = append(args, "-J")
	}
	args = append(args, "-t", target)
	if start != "" {
		args = append(args, "-S", start)
	}
	if end != "" {
		args = append(args, "-E", end)
	}
	return args
}

// ShellQuote quotes s for a POSIX shell only when it needs it: words made
// of [A-Za-z0-9_@%+=:,./-] are left bare, anything else is single-quoted
// with embedded quotes written as '"'"'.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		if !shellSafe(s[i]) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

func shellSafe(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("_@%+=:,./-", b) >= 0
}

// shellJoin quotes each argument with ShellQuote and joins them with
// spaces (Python's shlex.join): a command line a POSIX shell splits back
// into argv.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}
