package tools

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"
)

// Handler runs a tool whose target is resolved, with its arguments
// decoded into the tool's own struct (typed).
type Handler struct {
	run  handlerFunc
	args reflect.Type
}

// handlerFunc runs a tool whose target is resolved.
type handlerFunc func(ctx context.Context, c *Call) (any, error)

// Handle runs the handler.
func (h Handler) Handle(ctx context.Context, c *Call) (any, error) { return h.run(ctx, c) }

// ArgNames lists the argument names the handler's struct reads, for the
// test that holds them to the tool's schema.
func (h Handler) ArgNames() []string { return planFor(h.args).names() }

// typed is the Handler of f: it passes f the call's validated arguments
// decoded into an A (argsOf). A is a struct; an unsupported field type
// panics when the tool table is built, which every test of the package
// sees.
func typed[A any](f func(ctx context.Context, c *Call, a A) (any, error)) Handler {
	t := reflect.TypeFor[A]()
	planFor(t)
	return Handler{args: t, run: func(ctx context.Context, c *Call) (any, error) {
		return f(ctx, c, argsOf[A](c))
	}}
}

// argsOf is the call's validated arguments decoded into an A, once per
// call and struct type (a Check, the target resolution and the handler
// may read the same struct).
func argsOf[A any](c *Call) A {
	for _, d := range c.decoded {
		if a, ok := d.(A); ok {
			return a
		}
	}
	var a A
	planFor(reflect.TypeFor[A]()).fill(c.Args, reflect.ValueOf(&a).Elem())
	c.decoded = append(c.decoded, a)
	return a
}

// Checker validates a call's arguments beyond their schema, before
// anything is resolved or run, from the struct it decodes them into
// (checked).
type Checker struct {
	run  func(c *Call) error
	args reflect.Type
}

// checked is the Checker of f, which reads the call's arguments as an A.
func checked[A any](f func(a A) error) Checker {
	t := reflect.TypeFor[A]()
	planFor(t)
	return Checker{args: t, run: func(c *Call) error { return f(argsOf[A](c)) }}
}

// ArgNames lists the argument names the check reads (none without a
// check).
func (k Checker) ArgNames() []string {
	if k.args == nil {
		return nil
	}
	return planFor(k.args).names()
}

// noArgs is the argument struct of a tool whose handler reads no argument
// (its target, resolved before the handler, may still use some).
type noArgs struct{}

// argField is one field of an argument struct: where it is (its index
// path through embedded structs) and the argument it reads.
type argField struct {
	index []int
	name  string
	kind  argKind
}

type argKind int

const (
	kindString   argKind = iota // string: "" when absent
	kindStrPtr                  // *string
	kindInt                     // int: 0 when absent
	kindIntPtr                  // *int
	kindFloatPtr                // *float64, from an int too
	kindBool                    // bool: false when absent
	kindStrings                 // []string: nil when absent or null
	kindAny                     // any: the value as validation left it
)

var kindOf = map[reflect.Type]argKind{
	reflect.TypeFor[string]():   kindString,
	reflect.TypeFor[*string]():  kindStrPtr,
	reflect.TypeFor[int]():      kindInt,
	reflect.TypeFor[*int]():     kindIntPtr,
	reflect.TypeFor[*float64](): kindFloatPtr,
	reflect.TypeFor[bool]():     kindBool,
	reflect.TypeFor[[]string](): kindStrings,
	reflect.TypeFor[any]():      kindAny,
}

// argPlan is how to fill one argument struct type.
type argPlan []argField

// plans caches each argument struct's plan.
var plans sync.Map // reflect.Type -> argPlan

// planFor is the plan of struct type t (buildPlan), built once.
func planFor(t reflect.Type) argPlan {
	if p, ok := plans.Load(t); ok {
		return p.(argPlan)
	}
	p := buildPlan(t)
	plans.Store(t, p)
	return p
}

// buildPlan builds the plan of struct type t: each exported field reads
// the argument named by its `arg:"..."` tag, or else its name in
// snake_case (SessionID reads session_id); embedded structs are
// flattened.
func buildPlan(t reflect.Type) argPlan {
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("tools: argument type %s is not a struct", t))
	}
	var p argPlan
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		k, ok := kindOf[f.Type]
		if !ok {
			panic(fmt.Sprintf("tools: %s.%s: unsupported argument type %s", t, f.Name, f.Type))
		}
		name := f.Tag.Get("arg")
		if name == "" {
			name = snakeCase(f.Name)
		}
		p = append(p, argField{index: f.Index, name: name, kind: k})
	}
	return p
}

func (p argPlan) names() []string {
	out := make([]string, len(p))
	for i, f := range p {
		out[i] = f.name
	}
	return out
}

// fill sets v's fields from a. A value of another type than its field's
// leaves the field zero, as Args' getters return nil for it.
func (p argPlan) fill(a Args, v reflect.Value) {
	for _, f := range p {
		fv := v.FieldByIndex(f.index)
		switch f.kind {
		case kindString:
			fv.SetString(a.StrOr(f.name, ""))
		case kindStrPtr:
			fv.Set(reflect.ValueOf(a.Str(f.name)))
		case kindInt:
			if n := a.Int(f.name); n != nil {
				fv.SetInt(int64(*n))
			}
		case kindIntPtr:
			fv.Set(reflect.ValueOf(a.Int(f.name)))
		case kindFloatPtr:
			fv.Set(reflect.ValueOf(a.Float(f.name)))
		case kindBool:
			fv.SetBool(a.Bool(f.name))
		case kindStrings:
			fv.Set(reflect.ValueOf(a.Strings(f.name)))
		case kindAny:
			if x := a[f.name]; x != nil {
				fv.Set(reflect.ValueOf(x))
			}
		}
	}
}

// snakeCase spells a Go field name as an argument name: SessionID is
// session_id, MaxLines max_lines, X x.
func snakeCase(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || (unicode.IsUpper(r[i-1]) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// IsZero reports a missing handler.
func (h Handler) IsZero() bool { return h.run == nil }
