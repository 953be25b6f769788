// Package redact keeps secrets out of what fleetmux stores and logs: the
// audit summary of a call's arguments (sensitive values as digests,
// long strings cut, as the reference's audit does) and the scrubbing of
// error texts in which tmux echoes a sensitive value back.
package redact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

// Redaction limits and names, as in libtmux-mcp 0.1.0a20 (its constants
// SENSITIVE_ARG_NAMES, SEND_KEYS_OPERATION_AUDIT_TYPES,
// AUDIT_MAX_LOGGED_STR_LEN and AUDIT_TRUNCATION_SUFFIX).
const (
	// maxLoggedStrLen is the longest non-sensitive string argument kept whole,
	// counted in Unicode code points.
	maxLoggedStrLen = 200
	// truncationSuffix marks a string argument cut to maxLoggedStrLen.
	truncationSuffix = "...<truncated>"
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

// Args returns the audit summary of a tool call's raw arguments (before
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
//   - any other string longer than maxLoggedStrLen code points is cut to that
//     length and suffixed with truncationSuffix; all else passes through.
//
// One deliberate difference: the reference server passes a sensitive argument
// that is neither a string, an object nor null (for example a list) through
// unchanged; here it becomes the {"type", "redacted"} shape, so a payload
// never reaches the audit log whatever its type.
//
// Values are normalised through JSON first, so numbers in the result are
// json.Number and objects are map[string]any. A float64 with an integral
// value counts as a Python int; use JSON on the raw request bytes when
// the int/float distinction and key order matter.
func Args(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	raw, err := pyfmt.MarshalNoEscape(args)
	if err != nil {
		return map[string]any{"type": "dict", "redacted": true}
	}
	v, err := pyfmt.DecodeOrdered(raw)
	if err != nil {
		return map[string]any{"type": "dict", "redacted": true}
	}
	obj, ok := v.(*pyfmt.OMap)
	if !ok {
		return map[string]any{"type": pyfmt.TypeName(v), "redacted": true}
	}
	m, _ := pyfmt.ToPlain(summarizeArgs(obj, 0)).(map[string]any)
	return m
}

// JSON is Args for the raw JSON arguments of a request. It keeps the
// order of object keys and tells integers from floats exactly as Python's
// json module would. Empty input or null gives {}; input that is not a JSON
// object gives the {"type", "redacted"} shape; invalid JSON gives
// {"invalid_json": {"len", "sha256_prefix"}} so its bytes are never kept.
func JSON(raw json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}")
	}
	v, err := pyfmt.DecodeOrdered(trimmed)
	var out any
	switch obj, ok := v.(*pyfmt.OMap); {
	case err != nil:
		o := pyfmt.NewOMap()
		o.Set("invalid_json", digest(string(raw)))
		out = o
	case !ok:
		out = redactedShape(v)
	default:
		out = summarizeArgs(obj, 0)
	}
	b, err := pyfmt.MarshalNoEscape(out)
	if err != nil { // unreachable: the tree holds only JSON-encodable values
		return json.RawMessage(`{"redacted":true}`)
	}
	return b
}

func summarizeArgs(args *pyfmt.OMap, depth int) *pyfmt.OMap {
	out := pyfmt.NewOMap()
	for _, k := range args.Keys() {
		v := get(args, k)
		switch {
		case sensitiveArgNames[k]:
			switch tv := v.(type) {
			case string:
				out.Set(k, digest(tv))
			case *pyfmt.OMap:
				d := pyfmt.NewOMap()
				for _, kk := range tv.Keys() {
					d.Set(kk, digest(pyfmt.Str(get(tv, kk))))
				}
				out.Set(k, d)
			case nil:
				out.Set(k, nil)
			default:
				out.Set(k, redactedShape(v))
			}
		case k == "operations":
			list, ok := v.([]any)
			if !ok {
				out.Set(k, redactedShape(v))
				continue
			}
			items := make([]any, len(list))
			for i, item := range list {
				if o, ok := item.(*pyfmt.OMap); ok && depth < maxRedactDepth {
					items[i] = summarizeOperation(o, depth+1)
				} else {
					items[i] = redactedShape(item)
				}
			}
			out.Set(k, items)
		default:
			if s, ok := v.(string); ok && utf8.RuneCountInString(s) > maxLoggedStrLen {
				out.Set(k, truncateRunes(s, maxLoggedStrLen)+truncationSuffix)
			} else {
				out.Set(k, v)
			}
		}
	}
	return out
}

func summarizeOperation(op *pyfmt.OMap, depth int) *pyfmt.OMap {
	out := pyfmt.NewOMap()
	if op.Has("tool") || op.Has("arguments") {
		for _, k := range op.Keys() {
			v := get(op, k)
			if s, ok := v.(string); ok && k == "tool" {
				out.Set(k, s)
			} else if o, ok := v.(*pyfmt.OMap); ok && k == "arguments" {
				out.Set(k, summarizeArgs(o, depth))
			} else {
				out.Set(k, redactedShape(v))
			}
		}
		return out
	}
	for _, k := range op.Keys() {
		v := get(op, k)
		if !slices.Contains(sendKeysOperationTypes[k], pyfmt.TypeName(v)) {
			out.Set(k, redactedShape(v))
			continue
		}
		single := pyfmt.NewOMap()
		single.Set(k, v)
		out.Set(k, get(summarizeArgs(single, depth), k))
	}
	return out
}

// digest returns {"len": <code points>, "sha256_prefix": <12 hex digits>}.
func digest(s string) *pyfmt.OMap {
	sum := sha256.Sum256([]byte(s))
	o := pyfmt.NewOMap()
	o.Set("len", json.Number(strconv.Itoa(utf8.RuneCountInString(s))))
	o.Set("sha256_prefix", hex.EncodeToString(sum[:])[:12])
	return o
}

func redactedShape(v any) *pyfmt.OMap {
	o := pyfmt.NewOMap()
	o.Set("type", pyfmt.TypeName(v))
	o.Set("redacted", true)
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

// get returns o's value of k (nil when unset).
func get(o *pyfmt.OMap, k string) any {
	v, _ := o.Get(k)
	return v
}
