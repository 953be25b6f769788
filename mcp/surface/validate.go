package surface

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ValErr is one argument problem, in pydantic's shape: location, message
// and type code. Input values are never part of it.
type ValErr struct {
	Loc  []string
	Msg  string
	Type string
}

// ValidationError is a failed argument check of one tool call.
type ValidationError struct {
	Tool   string
	Errors []ValErr
}

func (e *ValidationError) Error() string {
	noun := "validation error"
	if len(e.Errors) != 1 {
		noun = "validation errors"
	}
	lines := []string{fmt.Sprintf("%d %s for call[%s]", len(e.Errors), noun, e.Tool)}
	for _, it := range e.Errors {
		loc := strings.Join(it.Loc, ".")
		if loc == "" {
			loc = "__root__"
		}
		lines = append(lines, loc, fmt.Sprintf("  %s [type=%s]", it.Msg, it.Type))
	}
	return strings.Join(lines, "\n")
}

// Unexpected returns the argument names rejected as unknown.
func (e *ValidationError) Unexpected() []string {
	var out []string
	for _, it := range e.Errors {
		if it.Type == "unexpected_keyword_argument" && len(it.Loc) > 0 {
			out = append(out, it.Loc[len(it.Loc)-1])
		}
	}
	return out
}

// Validate checks raw arguments against the tool's parameters,
// coercing compatible values the way pydantic's lax mode does, and applies
// defaults for omitted parameters. extra names parameters accepted beyond
// the spec (the fleet host parameter).
func Validate(t *Tool, raw map[string]any, defaults map[string]any, extra map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(t.Params)+len(extra))
	var errs []ValErr
	known := make(map[string]bool, len(t.Params))
	for i := range t.Params {
		p := &t.Params[i]
		known[p.Name] = true
		v, present := raw[p.Name]
		if !present {
			if p.Required {
				errs = append(errs, ValErr{[]string{p.Name}, "Missing required argument", "missing_argument"})
				continue
			}
			if d, ok := defaults[p.Name]; ok {
				out[p.Name] = d
			} else if p.Default != nil {
				// Spec defaults decode as JSON numbers (float64): give
				// them the parameter's Go type.
				cv, es := coerceParam(p, p.Default, []string{p.Name})
				if len(es) > 0 {
					cv = p.Default
				}
				out[p.Name] = cv
			} else {
				out[p.Name] = nil
			}
			continue
		}
		cv, es := coerceParam(p, v, []string{p.Name})
		errs = append(errs, es...)
		out[p.Name] = cv
	}
	for k, d := range extra {
		known[k] = true
		if v, ok := raw[k]; ok && v != nil {
			cv, e := coerceExtra(k, v)
			if e != nil {
				errs = append(errs, *e)
				continue
			}
			out[k] = cv
		} else {
			out[k] = d
		}
	}
	var unknown []string
	for k := range raw {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		errs = append(errs, ValErr{[]string{k}, "Unexpected keyword argument", "unexpected_keyword_argument"})
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Tool: t.Name, Errors: errs}
	}
	return out, nil
}

func coerceParam(p *Param, v any, loc []string) (any, []ValErr) {
	if v == nil {
		if p.Nullable {
			return nil, nil
		}
	}
	types := p.TypeNames()
	if p.Enum != nil {
		// A Literal accepts only its own values; anything else (another
		// type, null where not nullable) is a literal_error.
		if s, ok := v.(string); ok {
			for _, e := range p.Enum {
				if e == s {
					return s, nil
				}
			}
		}
		return nil, []ValErr{{loc, "Input should be " + literalList(p.Enum), "literal_error"}}
	}
	if len(types) == 1 {
		return coerceType(types[0], v, loc)
	}
	// Union (smart mode): an exact type match wins, then the first lax match.
	for _, tn := range types {
		if exactType(tn, v) {
			cv, es := coerceType(tn, v, loc)
			if len(es) == 0 {
				return cv, nil
			}
		}
	}
	var all []ValErr
	for _, tn := range types {
		cv, es := coerceType(tn, v, append(append([]string(nil), loc...), unionLabel(tn)))
		if len(es) == 0 {
			return cv, nil
		}
		all = append(all, es...)
	}
	return nil, all
}

func unionLabel(tn string) string {
	switch tn {
	case "string":
		return "str"
	case "integer":
		return "int"
	case "object<string,string>":
		return "dict[str,str]"
	}
	return tn
}

func exactType(tn string, v any) bool {
	switch tn {
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		f, ok := asFloat(v)
		return ok && f == math.Trunc(f)
	case "object<string,string>":
		_, ok := v.(map[string]any)
		return ok
	}
	return false
}

func literalList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + v + "'"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func coerceType(tn string, v any, loc []string) (any, []ValErr) {
	switch tn {
	case "string":
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, []ValErr{{loc, "Input should be a valid string", "string_type"}}
	case "integer":
		return coerceInt(v, loc)
	case "number":
		return coerceNumber(v, loc)
	case "boolean":
		return coerceBool(v, loc)
	case "object":
		if m, ok := v.(map[string]any); ok {
			return m, nil
		}
		return nil, []ValErr{{loc, "Input should be a valid dictionary", "dict_type"}}
	case "object<string,string>":
		m, ok := v.(map[string]any)
		if !ok {
			return nil, []ValErr{{loc, "Input should be a valid dictionary", "dict_type"}}
		}
		var errs []ValErr
		keys := slices.Sorted(maps.Keys(m))
		for _, k := range keys {
			if _, ok := m[k].(string); !ok {
				errs = append(errs, ValErr{append(append([]string(nil), loc...), k), "Input should be a valid string", "string_type"})
			}
		}
		if errs != nil {
			return nil, errs
		}
		return m, nil
	}
	if strings.HasPrefix(tn, "array<") {
		inner := tn[len("array<") : len(tn)-1]
		arr, ok := v.([]any)
		if !ok {
			return nil, []ValErr{{loc, "Input should be a valid list", "list_type"}}
		}
		out := make([]any, len(arr))
		var errs []ValErr
		for i, e := range arr {
			iloc := append(append([]string(nil), loc...), strconv.Itoa(i))
			var cv any
			var es []ValErr
			if fields, ok := inputModels[inner]; ok {
				cv, es = coerceModel(inner, fields, e, iloc)
			} else {
				cv, es = coerceType(inner, e, iloc)
			}
			errs = append(errs, es...)
			out[i] = cv
		}
		if errs != nil {
			return nil, errs
		}
		return out, nil
	}
	return v, nil
}

// coerceExtra checks a fleet-mode parameter: host is a string or a list
// of strings; serial and max_failures are integers (at least 1 and 0);
// host_timeout is a positive number of seconds.
func coerceExtra(k string, v any) (any, *ValErr) {
	bad := func(msg, typ string) (any, *ValErr) { return nil, &ValErr{[]string{k}, msg, typ} }
	switch k {
	case "host":
		switch h := v.(type) {
		case string:
			return h, nil
		case []any:
			if len(h) == 0 {
				return bad("List should have at least 1 item after validation, not 0", "too_short")
			}
			out := make([]string, len(h))
			for i, e := range h {
				s, ok := e.(string)
				if !ok {
					return nil, &ValErr{[]string{k, strconv.Itoa(i)}, "Input should be a valid string", "string_type"}
				}
				out[i] = s
			}
			return out, nil
		}
		return bad("Input should be a valid string or a list of strings", "string_type")
	case "serial", "max_failures":
		f, ok := asFloat(v)
		if !ok || f != math.Trunc(f) || math.Abs(f) > 1e9 {
			return bad("Input should be a valid integer", "int_type")
		}
		least := 1
		if k == "max_failures" {
			least = 0
		}
		if int(f) < least {
			return bad(fmt.Sprintf("Input should be greater than or equal to %d", least), "greater_than_equal")
		}
		return int(f), nil
	case "host_timeout":
		f, ok := asFloat(v)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return bad("Input should be a valid number", "float_type")
		}
		if f <= 0 {
			return bad("Input should be greater than 0", "greater_than")
		}
		return f, nil
	}
	s, ok := v.(string)
	if !ok {
		return bad("Input should be a valid string", "string_type")
	}
	return s, nil
}

// inputModels are the nested argument models (extra fields forbidden).
var inputModels = map[string][]Param{
	"SendKeysOperation": {
		{Name: "keys", Type: json.RawMessage(`"string"`), Required: true},
		{Name: "pane_id", Type: json.RawMessage(`"string"`), Nullable: true},
		{Name: "session_name", Type: json.RawMessage(`"string"`), Nullable: true},
		{Name: "session_id", Type: json.RawMessage(`"string"`), Nullable: true},
		{Name: "window_id", Type: json.RawMessage(`"string"`), Nullable: true},
		{Name: "enter", Type: json.RawMessage(`"boolean"`), Default: true},
		{Name: "literal", Type: json.RawMessage(`"boolean"`), Default: false},
		{Name: "suppress_history", Type: json.RawMessage(`"boolean"`), Default: false},
	},
	"ToolCallOperation": {
		{Name: "tool", Type: json.RawMessage(`"string"`), Required: true},
		{Name: "arguments", Type: json.RawMessage(`"object"`), Default: map[string]any{}},
	},
}

func coerceModel(name string, fields []Param, v any, loc []string) (any, []ValErr) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, []ValErr{{loc, "Input should be a valid dictionary or instance of " + name, "model_type"}}
	}
	out := map[string]any{}
	var errs []ValErr
	known := map[string]bool{}
	for i := range fields {
		f := &fields[i]
		known[f.Name] = true
		fv, present := m[f.Name]
		floc := append(append([]string(nil), loc...), f.Name)
		if !present {
			if f.Required {
				errs = append(errs, ValErr{floc, "Field required", "missing"})
				continue
			}
			out[f.Name] = f.Default
			continue
		}
		cv, es := coerceParam(f, fv, floc)
		errs = append(errs, es...)
		out[f.Name] = cv
	}
	var unknown []string
	for k := range m {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		errs = append(errs, ValErr{append(append([]string(nil), loc...), k), "Extra inputs are not permitted", "extra_forbidden"})
	}
	return out, errs
}

// Lax scalar coercion with pydantic 2.13's rules (Python-mode input, the
// values a JSON decoder yields). JSON numbers keep Python's int/float
// distinction: a literal with '.', 'e' or 'E' is a float.

func numberIsFloat(n json.Number) bool { return strings.ContainsAny(string(n), ".eE") }

// numberValue splits a scalar into (isNumber, isFloatLiteral, float value,
// int value, int overflowed).
func numberValue(v any) (ok, isFloat bool, f float64, i int64, big bool) {
	switch x := v.(type) {
	case json.Number:
		if !numberIsFloat(x) {
			n, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil {
				f, _ := strconv.ParseFloat(string(x), 64)
				return true, false, f, clampInt(f), true
			}
			return true, false, float64(n), n, false
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !math.IsInf(f, 0) {
			return false, false, 0, 0, false
		}
		return true, true, f, 0, false
	case float64:
		return true, true, x, 0, false
	case int:
		return true, false, float64(x), int64(x), false
	case int64:
		return true, false, float64(x), x, false
	}
	return false, false, 0, 0, false
}

func clampInt(f float64) int64 {
	if f < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

// floatToInt is pydantic's float_as_int.
func floatToInt(f float64, loc []string) (any, []ValErr) {
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return nil, []ValErr{{loc, "Input should be a finite number", "finite_number"}}
	case f != math.Trunc(f):
		return nil, []ValErr{{loc, "Input should be a valid integer, got a number with a fractional part", "int_from_float"}}
	case f <= -9223372036854775808.0 || f >= 9223372036854775808.0:
		return nil, []ValErr{{loc, "Unable to parse input string as an integer, exceeded maximum size", "int_parsing_size"}}
	}
	return int(f), nil
}

func coerceInt(v any, loc []string) (any, []ValErr) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case string:
		if n, ok := pyStrInt(x); ok {
			return n, nil
		}
		return nil, []ValErr{{loc, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"}}
	}
	ok, isFloat, f, i, _ := numberValue(v)
	if !ok {
		return nil, []ValErr{{loc, "Input should be a valid integer", "int_type"}}
	}
	if isFloat {
		return floatToInt(f, loc)
	}
	return int(i), nil
}

// pyStrInt parses an integer string as pydantic does: surrounding
// whitespace, an optional sign, ASCII digits; a ".0+" tail and single
// underscores between digits are tolerated. Integers beyond 64 bits are
// clamped (Python would keep them exact).
func pyStrInt(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if n, ok := parseDecInt(s); ok {
		return n, true
	}
	if i := strings.IndexByte(s, '.'); i >= 0 && i+1 < len(s) && strings.Trim(s[i+1:], "0") == "" {
		s = s[:i]
		if n, ok := parseDecInt(s); ok {
			return n, true
		}
	}
	if u, ok := stripUnderscores(s); ok {
		return parseDecInt(u)
	}
	return 0, false
}

func parseDecInt(s string) (int, bool) {
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digits == "" {
		return 0, false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if s[0] == '-' {
			return math.MinInt64, true
		}
		return math.MaxInt64, true
	}
	return int(n), true
}

// stripUnderscores removes digit-group underscores; an underscore that
// is not between two digits makes the string invalid.
func stripUnderscores(s string) (string, bool) {
	if !strings.Contains(s, "_") {
		return "", false
	}
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	for i := 0; i < len(s); i++ {
		if s[i] == '_' && (i == 0 || i == len(s)-1 || !isDigit(s[i-1]) || !isDigit(s[i+1])) {
			return "", false
		}
	}
	return strings.ReplaceAll(s, "_", ""), true
}

func coerceNumber(v any, loc []string) (any, []ValErr) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1.0, nil
		}
		return 0.0, nil
	case string:
		if f, ok := pyStrFloat(x); ok {
			return f, nil
		}
		return nil, []ValErr{{loc, "Input should be a valid number, unable to parse string as a number", "float_parsing"}}
	}
	ok, _, f, _, big := numberValue(v)
	if !ok || (big && math.IsInf(f, 0)) {
		return nil, []ValErr{{loc, "Input should be a valid number", "float_type"}}
	}
	return f, nil
}

// pyStrFloat parses a float string the way pydantic does: decimal
// notation, inf/infinity/nan in any case with an optional sign, digit
// group underscores; no hexadecimal floats.
func pyStrFloat(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	parse := func(t string) (float64, bool) {
		if t == "" || strings.ContainsAny(t, "xX_") {
			return 0, false
		}
		if strings.EqualFold(strings.TrimLeft(t, "+-"), "nan") && len(t)-len(strings.TrimLeft(t, "+-")) <= 1 {
			return math.NaN(), true
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil && !math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	}
	if f, ok := parse(s); ok {
		return f, true
	}
	if u, ok := stripUnderscores(s); ok {
		return parse(u)
	}
	return 0, false
}

func coerceBool(v any, loc []string) (any, []ValErr) {
	parsing := []ValErr{{loc, "Input should be a valid boolean, unable to interpret input", "bool_parsing"}}
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch {
		case x == "0" || asciiFoldIn(x, "f", "n", "no", "off", "false"):
			return false, nil
		case x == "1" || asciiFoldIn(x, "t", "y", "on", "yes", "true"):
			return true, nil
		}
		return nil, parsing
	}
	ok, isFloat, f, i, _ := numberValue(v)
	if !ok {
		return nil, []ValErr{{loc, "Input should be a valid boolean", "bool_type"}}
	}
	if isFloat {
		switch {
		case f == 0:
			return false, nil
		case f == 1:
			return true, nil
		case f != math.Trunc(f):
			return nil, []ValErr{{loc, "Input should be a valid boolean", "bool_type"}}
		}
		return nil, parsing
	}
	switch i {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return nil, parsing
}

// asciiFoldIn reports whether s equals one of words ignoring ASCII case.
func asciiFoldIn(s string, words ...string) bool {
	for _, w := range words {
		if len(s) != len(w) {
			continue
		}
		match := true
		for i := 0; i < len(s); i++ {
			c := s[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
