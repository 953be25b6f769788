package pyfmt

import (
	"strings"
	"unicode"
)

// IsSpace is Python's str.isspace for one character.
func IsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// Strip is Python's str.strip().
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// RStrip is Python's str.rstrip().
func RStrip(s string) string { return strings.TrimRightFunc(s, IsSpace) }

// SliceFrom is Python's s[start:].
func SliceFrom[T any](s []T, start int) []T {
	if start < 0 {
		start += len(s)
		if start < 0 {
			start = 0
		}
	}
	if start > len(s) {
		start = len(s)
	}
	return s[start:]
}
