package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Redaction limits and names, as in libtmux-mcp 0.1.0a20 (its constants
// SENSITIVE_ARG_NAMES, SEND_KEYS_OPERATION_AUDIT_TYPES,
// AUDIT_MAX_LOGGED_STR_LEN and AUDIT_TRUNCATION_SUFFIX).
const (
	// MaxLoggedStrLen is the longest non-sensitive string argument kept whole,
	// counted in Unicode code points.
	MaxLoggedStrLen = 200
	// TruncationSuffix marks a string argument cut to MaxLoggedStrLen.
	TruncationSuffix = "...<truncated>"
	// maxRedactDepth bounds recursion over nested argument values.
	maxRedactDepth = 200
)

// sensitiveArgNames are argument names whose values are replaced by a digest.
// Matched exactly and case-sensitively.
var sensitiveArgNames = map[string]bool{
	"keys": true, "text": true, "command": true, "value": true,
	"content": true, "shell": true, "environment": true,
}

// sendKeysOperationTypes lists the fields of a send_keys_batch operation and
// the Python type names each may have to be summarised normally.
var sendKeysOperationTypes = map[string][]string{
	"keys":             {"str"},
	"pane_id":          {"str", "NoneType"},
	"session_name":     {"str", "NoneType"},
	"session_id":       {"str", "NoneType"},
	"window_id":        {"str", "NoneType"},
	"enter":            {"bool"},
	"literal":          {"bool"},
	"suppress_history": {"bool"},
}

// Redact returns the audit summary of a tool call's raw arguments (before
// schema defaults are applied), following the reference server's rules:
//
//   - a sensitive argument (keys, text, command, value, content, shell,
//     environment) holding a string becomes {"len": <code points>,
//     "sha256_prefix": <first 12 hex digits of the SHA-256 of its UTF-8>};
//     holding an object, it keeps its keys and each value is digested after
//     conversion to Python's str() form (true → "True", 1.0 → "1.0", ...);
//   - "operations" is summarised element by element: generic batch items
//     (with "tool" or "arguments") keep a string tool and have their
//     arguments summarised recursively; other objects are send_keys_batch
//     operations, whose known fields of the expected type are summarised
//     normally; anything else becomes {"type": <Python type name>,
//     "redacted": true};
//   - any other string longer than MaxLoggedStrLen code points is cut to that
//     length and suffixed with TruncationSuffix; all else passes through.
//
// One deliberate difference: the reference server passes a sensitive argument
// that is neither a string, an object nor null (for example a list) through
// unchanged; here it becomes the {"type", "redacted"} shape, so a payload
// never reaches the audit log whatever its type.
//
// Values are normalised through JSON first, so numbers in the result are
// json.Number and objects are map[string]any. A float64 with an integral
// value counts as a Python int; use RedactJSON on the raw request bytes when
// the int/float distinction and key order matter.
func Redact(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	raw, err := marshalNoEscape(args)
	if err != nil {
		return map[string]any{"type": "dict", "redacted": true}
	}
	v, err := decodeOrdered(raw)
	if err != nil {
		return map[string]any{"type": "dict", "redacted": true}
	}
	obj, ok := v.(*object)
	if !ok {
		return map[string]any{"type": pyTypeName(v), "redacted": true}
	}
	m, _ := toPlain(summarizeArgs(obj, 0)).(map[string]any)
	return m
}

// RedactJSON is Redact for the raw JSON arguments of a request. It keeps the
// order of object keys and tells integers from floats exactly as Python's
// json module would. Empty input or null gives {}; input that is not a JSON
// object gives the {"type", "redacted"} shape; invalid JSON gives
// {"invalid_json": {"len", "sha256_prefix"}} so its bytes are never kept.
func RedactJSON(raw json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}")
	}
	v, err := decodeOrdered(trimmed)
	var out any
	switch obj, ok := v.(*object); {
	case err != nil:
		o := newObject()
		o.set("invalid_json", digest(string(raw)))
		out = o
	case !ok:
		out = redactedShape(v)
	default:
		out = summarizeArgs(obj, 0)
	}
	b, err := marshalNoEscape(out)
	if err != nil { // unreachable: the tree holds only JSON-encodable values
		return json.RawMessage(`{"redacted":true}`)
	}
	return b
}

func summarizeArgs(args *object, depth int) *object {
	out := newObject()
	for _, k := range args.keys {
		v := args.vals[k]
		switch {
		case sensitiveArgNames[k]:
			switch tv := v.(type) {
			case string:
				out.set(k, digest(tv))
			case *object:
				d := newObject()
				for _, kk := range tv.keys {
					d.set(kk, digest(pyStr(tv.vals[kk])))
				}
				out.set(k, d)
			case nil:
				out.set(k, nil)
			default:
				out.set(k, redactedShape(v))
			}
		case k == "operations":
			list, ok := v.([]any)
			if !ok {
				out.set(k, redactedShape(v))
				continue
			}
			items := make([]any, len(list))
			for i, item := range list {
				if o, ok := item.(*object); ok && depth < maxRedactDepth {
					items[i] = summarizeOperation(o, depth+1)
				} else {
					items[i] = redactedShape(item)
				}
			}
			out.set(k, items)
		default:
			if s, ok := v.(string); ok && utf8.RuneCountInString(s) > MaxLoggedStrLen {
				out.set(k, truncateRunes(s, MaxLoggedStrLen)+TruncationSuffix)
			} else {
				out.set(k, v)
			}
		}
	}
	return out
}

func summarizeOperation(op *object, depth int) *object {
	out := newObject()
	if op.has("tool") || op.has("arguments") {
		for _, k := range op.keys {
			v := op.vals[k]
			if s, ok := v.(string); ok && k == "tool" {
				out.set(k, s)
			} else if o, ok := v.(*object); ok && k == "arguments" {
				out.set(k, summarizeArgs(o, depth))
			} else {
				out.set(k, redactedShape(v))
			}
		}
		return out
	}
	for _, k := range op.keys {
		v := op.vals[k]
		if !typeAllowed(sendKeysOperationTypes[k], pyTypeName(v)) {
			out.set(k, redactedShape(v))
			continue
		}
		single := newObject()
		single.set(k, v)
		out.set(k, summarizeArgs(single, depth).vals[k])
	}
	return out
}

func typeAllowed(allowed []string, name string) bool {
	for _, a := range allowed {
		if a == name {
			return true
		}
	}
	return false
}

// digest returns {"len": <code points>, "sha256_prefix": <12 hex digits>}.
func digest(s string) *object {
	sum := sha256.Sum256([]byte(s))
	o := newObject()
	o.set("len", json.Number(strconv.Itoa(utf8.RuneCountInString(s))))
	o.set("sha256_prefix", hex.EncodeToString(sum[:])[:12])
	return o
}

func redactedShape(v any) *object {
	o := newObject()
	o.set("type", pyTypeName(v))
	o.set("redacted", true)
	return o
}

func truncateRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// pyTypeName is Python's type(v).__name__ for a value decoded from JSON.
func pyTypeName(v any) string {
	switch tv := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case string:
		return "str"
	case json.Number:
		if isJSONFloat(tv) {
			return "float"
		}
		return "int"
	case []any:
		return "list"
	case *object:
		return "dict"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func isJSONFloat(n json.Number) bool { return strings.ContainsAny(string(n), ".eE") }

// pyStr is Python's str(v) for a value decoded from JSON.
func pyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	pyRepr(&b, v, 0)
	return b.String()
}

// pyRepr writes Python's repr(v) for a value decoded from JSON.
func pyRepr(b *strings.Builder, v any, depth int) {
	if depth > maxRedactDepth {
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
		pyReprString(b, tv)
	case json.Number:
		b.WriteString(pyNumber(tv))
	case []any:
		b.WriteByte('[')
		for i, item := range tv {
			if i > 0 {
				b.WriteString(", ")
			}
			pyRepr(b, item, depth+1)
		}
		b.WriteByte(']')
	case *object:
		b.WriteByte('{')
		for i, k := range tv.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			pyReprString(b, k)
			b.WriteString(": ")
			pyRepr(b, tv.vals[k], depth+1)
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, v)
	}
}

// PyRepr returns Python's repr of a str: single quotes unless the text
// has a single quote and no double quote; backslash, the quote, \t, \n
// and \r escaped; other control and non-printable characters as \x, \u
// or \U escapes. The audit summaries use it, and so do the MCP messages
// and prompts that quote values the way the anchor does.
func PyRepr(s string) string {
	var b strings.Builder
	pyReprString(&b, s)
	return b.String()
}

// pyReprString writes Python's repr of a str.
func pyReprString(b *strings.Builder, s string) {
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

// pyNumber is Python's str() of the int or float json.loads makes of n.
func pyNumber(n json.Number) string {
	s := string(n)
	if !isJSONFloat(n) {
		if strings.Trim(s, "-0") == "" {
			return "0"
		}
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return s
	}
	return pyFloatRepr(f)
}

// pyFloatRepr is Python's repr(float): the shortest round-tripping digits,
// in positional form when the decimal exponent is in [-4, 16).
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if f < 0 {
		sign = "-"
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	if exp < -4 || exp >= 16 {
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
	decpt := exp + 1
	switch {
	case decpt <= 0:
		return sign + "0." + strings.Repeat("0", -decpt) + digits
	case decpt >= len(digits):
		return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
	default:
		return sign + digits[:decpt] + "." + digits[decpt:]
	}
}

// object is a JSON object that keeps its keys in input order, like a Python
// dict built by json.loads (a repeated key keeps its first position and its
// last value).
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) has(k string) bool { _, ok := o.vals[k]; return ok }

// MarshalJSON writes the object with its keys in order.
func (o *object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := marshalNoEscape(k)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := marshalNoEscape(o.vals[k])
		if err != nil {
			return nil, err
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// marshalNoEscape is json.Marshal without HTML escaping and without the
// trailing newline of json.Encoder.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

var errTooDeep = errors.New("store: JSON nested too deeply")

// decodeOrdered decodes one JSON value into nil, bool, string, json.Number,
// []any and *object, rejecting trailing data.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("store: trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > 10000 {
		return nil, errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := newObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("store: object key is not a string")
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return list, nil
		default:
			return nil, fmt.Errorf("store: unexpected JSON delimiter %q", t)
		}
	default:
		return t, nil
	}
}

// toPlain converts *object trees to map[string]any.
func toPlain(v any) any {
	switch tv := v.(type) {
	case *object:
		m := make(map[string]any, len(tv.keys))
		for _, k := range tv.keys {
			m[k] = toPlain(tv.vals[k])
		}
		return m
	case []any:
		out := make([]any, len(tv))
		for i, item := range tv {
			out[i] = toPlain(item)
		}
		return out
	default:
		return v
	}
}
