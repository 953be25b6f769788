package pyfmt

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// jsonError mimics Python's json.JSONDecodeError text:
// "<msg>: line L column C (char N)".
type jsonError struct{ msg string }

func (e *jsonError) Error() string { return e.msg }

// DecodeJSON decodes s as JSON; errors are worded like Python's.
func DecodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		off := 0
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = int(se.Offset) - 1
		}
		if off < 0 {
			off = 0
		}
		if strings.TrimSpace(s) == "" {
			off = len(s)
		}
		return nil, &jsonError{fmt.Sprintf("Expecting value: %s", jsonPos(s, off))}
	}
	if dec.More() {
		off := int(dec.InputOffset())
		for off < len(s) && strings.ContainsRune(" \t\r\n", rune(s[off])) {
			off++
		}
		return nil, &jsonError{fmt.Sprintf("Extra data: %s", jsonPos(s, off))}
	}
	return v, nil
}

func jsonPos(s string, off int) string {
	if off > len(s) {
		off = len(s)
	}
	line := strings.Count(s[:off], "\n") + 1
	col := off + 1
	if i := strings.LastIndex(s[:off], "\n"); i >= 0 {
		col = off - i
	}
	return fmt.Sprintf("line %d column %d (char %d)", line, col, off)
}
