package pyfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// OMap is a JSON object that keeps its keys in insertion order, like a
// Python dict (a repeated key keeps its first position and its last
// value). Schemas, model results and audit summaries need it: Go maps
// cannot keep the reference's order.
type OMap struct {
	keys []string
	vals map[string]any
}

// NewOMap returns an empty ordered map.
func NewOMap() *OMap { return &OMap{vals: map[string]any{}} }

// Set sets k, appending it when new.
func (m *OMap) Set(k string, v any) *OMap {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
	return m
}

// Get returns the value of k.
func (m *OMap) Get(k string) (any, bool) { v, ok := m.vals[k]; return v, ok }

// Has reports whether k is set.
func (m *OMap) Has(k string) bool { _, ok := m.vals[k]; return ok }

// Keys returns the keys in order.
func (m *OMap) Keys() []string { return m.keys }

// Len is the number of keys.
func (m *OMap) Len() int { return len(m.keys) }

// Delete removes k.
func (m *OMap) Delete(k string) {
	if _, ok := m.vals[k]; !ok {
		return
	}
	delete(m.vals, k)
	for i, kk := range m.keys {
		if kk == k {
			m.keys = append(m.keys[:i], m.keys[i+1:]...)
			break
		}
	}
}

// MarshalJSON writes the object with keys in order, without HTML
// escaping.
func (m *OMap) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := MarshalNoEscape(k)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := MarshalNoEscape(m.vals[k])
		if err != nil {
			return nil, err
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads an object keeping key order (nested objects become
// *OMap too).
func (m *OMap) UnmarshalJSON(b []byte) error {
	v, err := DecodeOrdered(b)
	if err != nil {
		return err
	}
	om, ok := v.(*OMap)
	if !ok {
		return errors.New("pyfmt: not a JSON object")
	}
	*m = *om
	return nil
}

// maxDecodeDepth bounds the nesting DecodeOrdered accepts.
const maxDecodeDepth = 10000

// DecodeOrdered decodes one JSON value into nil, bool, string,
// json.Number, []any and *OMap, rejecting trailing data.
func DecodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("pyfmt: trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDecodeDepth {
		return nil, errors.New("pyfmt: JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		m := NewOMap()
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, ok := kt.(string)
			if !ok {
				return nil, errors.New("pyfmt: object key is not a string")
			}
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			m.Set(k, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return m, nil
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
	}
	return nil, fmt.Errorf("pyfmt: unexpected JSON delimiter %q", d)
}

// MapObjects returns v with every outermost *OMap replaced by f's result,
// looking inside lists; f decides what happens inside the object.
func MapObjects(v any, f func(*OMap) any) any {
	switch tv := v.(type) {
	case *OMap:
		return f(tv)
	case []any:
		out := make([]any, len(tv))
		for i, e := range tv {
			out[i] = MapObjects(e, f)
		}
		return out
	}
	return v
}

// ToPlain converts *OMap trees to map[string]any.
func ToPlain(v any) any {
	return MapObjects(v, func(o *OMap) any {
		m := make(map[string]any, len(o.keys))
		for _, k := range o.keys {
			m[k] = ToPlain(o.vals[k])
		}
		return m
	})
}

// MarshalNoEscape is json.Marshal without HTML escaping.
func MarshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Compact renders v as compact JSON with non-ASCII and HTML characters
// left unescaped, as the reference's text content does.
func Compact(v any) string {
	b, err := MarshalNoEscape(v)
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(b)
}
