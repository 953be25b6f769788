package tools

// Args are a call's arguments as validation left them (package surface):
// strings, ints, float64s, bools, lists as []any, objects as maps.
type Args map[string]any

// Str returns a string argument or nil.
func (a Args) Str(name string) *string {
	if v, ok := a[name].(string); ok {
		return &v
	}
	return nil
}

// StrOr returns a string argument or def.
func (a Args) StrOr(name, def string) string {
	if v := a.Str(name); v != nil {
		return *v
	}
	return def
}

// Int returns an integer argument or nil.
func (a Args) Int(name string) *int {
	if v, ok := a[name].(int); ok {
		return &v
	}
	return nil
}

// Float returns a number argument or nil.
func (a Args) Float(name string) *float64 {
	switch v := a[name].(type) {
	case float64:
		return &v
	case int:
		f := float64(v)
		return &f
	}
	return nil
}

// Bool returns a boolean argument (false when absent).
func (a Args) Bool(name string) bool {
	v, _ := a[name].(bool)
	return v
}

// Strings returns a list-of-strings argument; nil when null.
func (a Args) Strings(name string) []string {
	arr, ok := a[name].([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
