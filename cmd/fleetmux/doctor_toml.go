package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parseTOML reads the part of TOML that MCP client configs use (Codex's
// config.toml): [table] and [dotted."quoted".table] headers, key = value
// lines with bare, quoted and dotted keys, and values that are basic or
// literal strings, arrays (over several lines too) and inline tables.
// Numbers, booleans and dates are kept as their text; arrays of tables
// ([[x]]) are skipped. It returns nested maps.
func parseTOML(text string) (map[string]any, error) {
	root := map[string]any{}
	cur := root
	skipping := false
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[[") {
			skipping = true
			continue
		}
		if line[0] == '[' {
			p := &tomlParser{s: line, pos: 1}
			keys, err := p.keyPath()
			if err == nil && !p.eat(']') {
				err = errors.New("missing ]")
			}
			if err == nil {
				err = p.end()
			}
			if err != nil {
				return nil, fmt.Errorf("line %d: table header: %w", lineNo, err)
			}
			t, err := descend(root, keys)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			cur, skipping = t, false
			continue
		}
		// A value may go on over several lines (arrays, inline tables).
		stmt := line
		for !balanced(stmt) && i+1 < len(lines) {
			i++
			stmt += "\n" + lines[i]
		}
		if skipping {
			continue
		}
		p := &tomlParser{s: stmt}
		keys, err := p.keyPath()
		if err == nil && !p.eat('=') {
			err = errors.New("want key = value")
		}
		var v any
		if err == nil {
			v, err = p.value()
		}
		if err == nil {
			err = p.end()
		}
		if err == nil {
			err = assign(cur, keys, v)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
	}
	return root, nil
}

// balanced reports whether brackets and braces outside strings and
// comments are closed.
func balanced(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'':
			q := s[i]
			for i++; i < len(s) && s[i] != q; i++ {
				if q == '"' && s[i] == '\\' {
					i++
				}
			}
		case '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		}
	}
	return depth <= 0
}

func descend(t map[string]any, keys []string) (map[string]any, error) {
	for _, k := range keys {
		next, ok := t[k]
		if !ok {
			m := map[string]any{}
			t[k], t = m, m
			continue
		}
		m, ok := next.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("key %q is not a table", k)
		}
		t = m
	}
	return t, nil
}

func assign(t map[string]any, keys []string, v any) error {
	t, err := descend(t, keys[:len(keys)-1])
	if err != nil {
		return err
	}
	last := keys[len(keys)-1]
	if _, dup := t[last]; dup {
		return fmt.Errorf("key %q defined twice", last)
	}
	t[last] = v
	return nil
}

type tomlParser struct {
	s   string
	pos int
}

func (p *tomlParser) skipSpace() {
	for p.pos < len(p.s) {
		switch c := p.s[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '#':
			for p.pos < len(p.s) && p.s[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *tomlParser) eat(c byte) bool {
	p.skipSpace()
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *tomlParser) end() error {
	p.skipSpace()
	if p.pos != len(p.s) {
		return fmt.Errorf("unexpected %q", p.s[p.pos:])
	}
	return nil
}

// keyPath reads a dotted key: bare and quoted parts joined by dots.
func (p *tomlParser) keyPath() ([]string, error) {
	var keys []string
	for {
		p.skipSpace()
		if p.pos >= len(p.s) {
			return nil, errors.New("missing key")
		}
		var k string
		switch p.s[p.pos] {
		case '"', '\'':
			v, err := p.str()
			if err != nil {
				return nil, err
			}
			k = v
		default:
			start := p.pos
			for p.pos < len(p.s) && (isBareKeyChar(p.s[p.pos])) {
				p.pos++
			}
			if start == p.pos {
				return nil, fmt.Errorf("bad key at %q", p.s[start:])
			}
			k = p.s[start:p.pos]
		}
		keys = append(keys, k)
		if !p.eat('.') {
			return keys, nil
		}
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// str reads a basic ("...") or literal ('...') string, one line each.
func (p *tomlParser) str() (string, error) {
	q := p.s[p.pos]
	if strings.HasPrefix(p.s[p.pos:], string([]byte{q, q, q})) {
		return "", errors.New("multi-line strings are not supported")
	}
	end := p.pos + 1
	for end < len(p.s) && p.s[end] != q && p.s[end] != '\n' {
		if q == '"' && p.s[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(p.s) || p.s[end] != q {
		return "", errors.New("unterminated string")
	}
	raw := p.s[p.pos : end+1]
	p.pos = end + 1
	if q == '\'' {
		return raw[1 : len(raw)-1], nil
	}
	v, err := strconv.Unquote(raw)
	if err != nil {
		return "", fmt.Errorf("bad string %s", raw)
	}
	return v, nil
}

func (p *tomlParser) value() (any, error) {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return nil, errors.New("missing value")
	}
	switch p.s[p.pos] {
	case '"', '\'':
		return p.str()
	case '[':
		p.pos++
		var arr []any
		for {
			if p.eat(']') {
				return arr, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
			if !p.eat(',') {
				if !p.eat(']') {
					return nil, errors.New("want , or ] in array")
				}
				return arr, nil
			}
		}
	case '{':
		p.pos++
		t := map[string]any{}
		if p.eat('}') {
			return t, nil
		}
		for {
			keys, err := p.keyPath()
			if err != nil {
				return nil, err
			}
			if !p.eat('=') {
				return nil, errors.New("want = in inline table")
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			if err := assign(t, keys, v); err != nil {
				return nil, err
			}
			if p.eat('}') {
				return t, nil
			}
			if !p.eat(',') {
				return nil, errors.New("want , or } in inline table")
			}
		}
	}
	// Numbers, booleans, dates: their text.
	start := p.pos
	for p.pos < len(p.s) && !strings.ContainsRune(",]}# \t\n", rune(p.s[p.pos])) {
		p.pos++
	}
	if start == p.pos {
		return nil, fmt.Errorf("bad value at %q", p.s[start:])
	}
	return p.s[start:p.pos], nil
}
