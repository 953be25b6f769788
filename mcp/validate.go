package mcp

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// valErr is one argument problem, in pydantic's shape: location, message
// and type code. Input values are never part of it.
type valErr struct {
	Loc  []string
	Msg  string
	Type string
}

// ValidationError is a failed argument check of one tool call.
type ValidationError struct {
	Tool   string
	Errors []valErr
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

// validateArgs checks raw arguments against the tool's parameters,
// coercing compatible values the way pydantic's lax mode does, and applies
// defaults for omitted parameters. extra names parameters accepted beyond
// the spec (the fleet host parameter).
func validateArgs(t *toolSpec, raw map[string]any, defaults map[string]any, extra map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(t.Params)+len(extra))
	var errs []valErr
	known := make(map[string]bool, len(t.Params))
	for i := range t.Params {
		p := &t.Params[i]
		known[p.Name] = true
		v, present := raw[p.Name]
		if !present {
			if p.Required {
				errs = append(errs, valErr{[]string{p.Name}, "Missing required argument", "missing_argument"})
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
		if v, ok := raw[k]; ok {
			s, isStr := v.(string)
			if !isStr {
				errs = append(errs, valErr{[]string{k}, "Input should be a valid string", "string_type"})
				continue
			}
			out[k] = s
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
	sortStrings(unknown)
	for _, k := range unknown {
		errs = append(errs, valErr{[]string{k}, "Unexpected keyword argument", "unexpected_keyword_argument"})
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Tool: t.Name, Errors: errs}
	}
	return out, nil
}

func coerceParam(p *paramSpec, v any, loc []string) (any, []valErr) {
	if v == nil {
		if p.Nullable {
			return nil, nil
		}
	}
	types := p.typeNames()
	if len(types) == 1 {
		cv, es := coerceType(types[0], v, loc)
		if len(es) == 0 && p.Enum != nil {
			s, _ := cv.(string)
			ok := false
			for _, e := range p.Enum {
				if e == s {
					ok = true
				}
			}
			if !ok {
				return nil, []valErr{{loc, "Input should be " + literalList(p.Enum), "literal_error"}}
			}
		}
		return cv, es
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
	var all []valErr
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

func coerceType(tn string, v any, loc []string) (any, []valErr) {
	switch tn {
	case "string":
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, []valErr{{loc, "Input should be a valid string", "string_type"}}
	case "integer":
		switch x := v.(type) {
		case bool:
			if x {
				return 1, nil
			}
			return 0, nil
		case string:
			s := strings.TrimSpace(x)
			if n, err := strconv.Atoi(strings.ReplaceAll(s, "_", "")); err == nil {
				return n, nil
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
				return int(f), nil
			}
			return nil, []valErr{{loc, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"}}
		}
		if f, ok := asFloat(v); ok {
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, []valErr{{loc, "Input should be a finite number", "finite_number"}}
			}
			if f != math.Trunc(f) {
				return nil, []valErr{{loc, "Input should be a valid integer, got a number with a fractional part", "int_from_float"}}
			}
			return int(f), nil
		}
		return nil, []valErr{{loc, "Input should be a valid integer", "int_type"}}
	case "number":
		switch x := v.(type) {
		case bool:
			if x {
				return 1.0, nil
			}
			return 0.0, nil
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return nil, []valErr{{loc, "Input should be a valid number, unable to parse string as a number", "float_parsing"}}
			}
			return f, nil
		}
		if f, ok := asFloat(v); ok {
			return f, nil
		}
		return nil, []valErr{{loc, "Input should be a valid number", "float_type"}}
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "1", "true", "t", "yes", "y", "on":
				return true, nil
			case "0", "false", "f", "no", "n", "off":
				return false, nil
			}
			return nil, []valErr{{loc, "Input should be a valid boolean, unable to interpret input", "bool_parsing"}}
		}
		if f, ok := asFloat(v); ok {
			if f == 1 {
				return true, nil
			}
			if f == 0 {
				return false, nil
			}
			return nil, []valErr{{loc, "Input should be a valid boolean, unable to interpret input", "bool_parsing"}}
		}
		return nil, []valErr{{loc, "Input should be a valid boolean", "bool_type"}}
	case "object":
		if m, ok := v.(map[string]any); ok {
			return m, nil
		}
		return nil, []valErr{{loc, "Input should be a valid dictionary", "dict_type"}}
	case "object<string,string>":
		m, ok := v.(map[string]any)
		if !ok {
			return nil, []valErr{{loc, "Input should be a valid dictionary", "dict_type"}}
		}
		var errs []valErr
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sortStrings(keys)
		for _, k := range keys {
			if _, ok := m[k].(string); !ok {
				errs = append(errs, valErr{append(append([]string(nil), loc...), k), "Input should be a valid string", "string_type"})
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
			return nil, []valErr{{loc, "Input should be a valid list", "list_type"}}
		}
		out := make([]any, len(arr))
		var errs []valErr
		for i, e := range arr {
			iloc := append(append([]string(nil), loc...), strconv.Itoa(i))
			var cv any
			var es []valErr
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

// inputModels are the nested argument models (extra fields forbidden).
var inputModels = map[string][]paramSpec{
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

func coerceModel(name string, fields []paramSpec, v any, loc []string) (any, []valErr) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, []valErr{{loc, "Input should be a valid dictionary or instance of " + name, "model_type"}}
	}
	out := map[string]any{}
	var errs []valErr
	known := map[string]bool{}
	for i := range fields {
		f := &fields[i]
		known[f.Name] = true
		fv, present := m[f.Name]
		floc := append(append([]string(nil), loc...), f.Name)
		if !present {
			if f.Required {
				errs = append(errs, valErr{floc, "Field required", "missing"})
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
	sortStrings(unknown)
	for _, k := range unknown {
		errs = append(errs, valErr{append(append([]string(nil), loc...), k), "Extra inputs are not permitted", "extra_forbidden"})
	}
	return out, errs
}
