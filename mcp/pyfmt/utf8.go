package pyfmt

import (
	"strings"
	"unicode/utf8"
)

// DecodeReplace decodes UTF-8 with Python's errors="replace": each
// maximal invalid subpart becomes one U+FFFD.
func DecodeReplace(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[:size])
			b = b[size:]
			continue
		}
		sb.WriteRune(utf8.RuneError)
		b = b[invalidSubpart(b):]
	}
	return sb.String()
}

// invalidSubpart is the length of the maximal prefix of b that starts a
// well-formed UTF-8 sequence without completing it (at least 1).
func invalidSubpart(b []byte) int {
	lead := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xbf)
	switch {
	case lead >= 0xc2 && lead <= 0xdf:
		need = 1
	case lead == 0xe0:
		need, lo = 2, 0xa0
	case lead == 0xed:
		need, hi = 2, 0x9f
	case lead >= 0xe1 && lead <= 0xef:
		need = 2
	case lead == 0xf0:
		need, lo = 3, 0x90
	case lead == 0xf4:
		need, hi = 3, 0x8f
	case lead >= 0xf1 && lead <= 0xf3:
		need = 3
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		c := b[n]
		if k == 0 && (c < lo || c > hi) || k > 0 && (c < 0x80 || c > 0xbf) {
			break
		}
		n++
	}
	return n
}
