package pyfmt

import (
	"math/rand/v2"
	"testing"
)

// TestInvalidSubpartTable: the lead-byte table gives the same maximal
// invalid subpart as the switch it replaced, for every lead byte followed
// by random bytes (biased to the continuation range) and for every
// two-byte prefix exhaustively.
func TestInvalidSubpartTable(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 1))
	check := func(b []byte) {
		t.Helper()
		if got, want := invalidSubpart(b), invalidSubpartSwitch(b); got != want {
			t.Fatalf("invalidSubpart(% x) = %d, want %d", b, got, want)
		}
	}
	for a := 0; a < 256; a++ {
		check([]byte{byte(a)})
		for c := 0; c < 256; c++ {
			check([]byte{byte(a), byte(c)})
		}
	}
	for range 200000 {
		b := make([]byte, 1+r.IntN(4))
		for i := range b {
			if i > 0 && r.IntN(4) != 0 {
				b[i] = byte(0x80 + r.IntN(0x40))
			} else {
				b[i] = byte(r.IntN(256))
			}
		}
		check(b)
	}
}

// invalidSubpartSwitch is the switch invalidSubpart was before the table: the length of the maximal prefix of b that starts a
// well-formed UTF-8 sequence without completing it (at least 1).
func invalidSubpartSwitch(b []byte) int {
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
