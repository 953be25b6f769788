// Package pyfmt formats values the way CPython does, for the places where
// fleetmux must print exactly what libtmux-mcp (a Python server) prints:
// repr of strings and values, repr of floats, type names, json.dumps
// string quoting and JSON objects that keep their key order. Each rule
// exists once, here, pinned by this package's tests.
package pyfmt

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Repr is Python's repr of a str: single quotes unless the text has a
// single quote and no double quote; backslash, the quote, \t, \n and \r
// escaped; other control and non-printable characters as \x, \u or \U
// escapes.
func Repr(s string) string {
	var b strings.Builder
	reprString(&b, s)
	return b.String()
}

// List is Python's repr of a list of str.
func List(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = Repr(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func reprString(b *strings.Builder, s string) {
	quote := '\''
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	b.WriteRune(quote)
	for _, r := range s {
		switch {
		case r == quote || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < 0x7f:
			b.WriteRune(r)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
	}
	b.WriteRune(quote)
}

// maxReprDepth bounds recursion over nested values.
const maxReprDepth = 200

// Str is Python's str(v) for a value decoded from JSON (DecodeOrdered or
// encoding/json with UseNumber): strings as they are, everything else as
// its repr.
func Str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	reprValue(&b, v, 0)
	return b.String()
}

func reprValue(b *strings.Builder, v any, depth int) {
	if depth > maxReprDepth {
		b.WriteString("...")
		return
	}
	switch tv := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if tv {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case string:
		reprString(b, tv)
	case json.Number:
		b.WriteString(Number(tv))
	case []any:
		b.WriteByte('[')
		for i, item := range tv {
			if i > 0 {
				b.WriteString(", ")
			}
			reprValue(b, item, depth+1)
		}
		b.WriteByte(']')
	case *OMap:
		b.WriteByte('{')
		for i, k := range tv.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			reprString(b, k)
			b.WriteString(": ")
			reprValue(b, tv.vals[k], depth+1)
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, v)
	}
}

// isFloat reports whether json.loads makes a float of n.
func isFloat(n json.Number) bool { return strings.ContainsAny(string(n), ".eE") }

// Number is Python's str() of the int or float json.loads makes of n.
func Number(n json.Number) string {
	s := string(n)
	if !isFloat(n) {
		if strings.Trim(s, "-0") == "" {
			return "0"
		}
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return s
	}
	return Float(f)
}

// Float is Python's repr(float): the shortest round-tripping digits, in
// positional form when the decimal exponent is in [-4, 16), otherwise
// scientific with a signed exponent of at least two digits.
func Float(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	sign := ""
	if math.Signbit(f) {
		sign = "-"
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d[.ddd]e±XX
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	if exp >= -4 && exp < 16 {
		if exp < 0 {
			return sign + "0." + strings.Repeat("0", -exp-1) + digits
		}
		if len(digits) <= exp+1 {
			return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
		}
		return sign + digits[:exp+1] + "." + digits[exp+1:]
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if exp < 0 {
		es = "-"
		exp = -exp
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
}

// TypeName is Python's type(v).__name__ for a value decoded from JSON.
func TypeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "NoneType"
	case string:
		return "str"
	case bool:
		return "bool"
	case []any:
		return "list"
	case map[string]any, *OMap:
		return "dict"
	case json.Number:
		if isFloat(x) {
			return "float"
		}
		return "int"
	case float64:
		return "float"
	case int:
		return "int"
	}
	return fmt.Sprintf("%T", v)
}

// JSONQuote quotes s as Python's json.dumps does (ensure_ascii): ", \ and
// the usual control characters escaped by name, everything outside
// printable ASCII as \uXXXX (surrogate pairs above the BMP).
func JSONQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || r >= 0x7f && r <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			case r > 0xffff:
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
