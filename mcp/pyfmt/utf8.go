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

// utf8Leads is Unicode's table of well-formed UTF-8 byte sequences
// (Table 3-7) by lead byte: how many continuation bytes follow, and the
// range of the first one (later ones are 0x80..0xbf).
var utf8Leads = []struct{ from, to, need, lo, hi byte }{
	{0xc2, 0xdf, 1, 0x80, 0xbf},
	{0xe0, 0xe0, 2, 0xa0, 0xbf},
	{0xe1, 0xec, 2, 0x80, 0xbf},
	{0xed, 0xed, 2, 0x80, 0x9f},
	{0xee, 0xef, 2, 0x80, 0xbf},
	{0xf0, 0xf0, 3, 0x90, 0xbf},
	{0xf1, 0xf3, 3, 0x80, 0xbf},
	{0xf4, 0xf4, 3, 0x80, 0x8f},
}

// invalidSubpart is the length of the maximal prefix of b that starts a
// well-formed UTF-8 sequence without completing it (at least 1).
func invalidSubpart(b []byte) int {
	for _, l := range utf8Leads {
		if b[0] < l.from || b[0] > l.to {
			continue
		}
		n := 1
		for k := 0; k < int(l.need) && n < len(b); k++ {
			c := b[n]
			if k == 0 && (c < l.lo || c > l.hi) || k > 0 && (c < 0x80 || c > 0xbf) {
				break
			}
			n++
		}
		return n
	}
	return 1
}
