package tmux

import (
	"errors"
	"fmt"
	"strconv"
)

// BuiltinLayouts are the layout names tmux knows.
var BuiltinLayouts = []string{"even-horizontal", "even-vertical", "main-horizontal", "main-vertical", "tiled", "main-horizontal-mirrored", "main-vertical-mirrored"}

// MaxLayoutSize bounds every width, height and offset of a custom layout
// (tmux's WINDOW_MAXIMUM).
const MaxLayoutSize = 10000

// maxLayoutLen bounds a custom layout string.
const maxLayoutLen = 8192

// CheckLayout accepts a built-in layout name or a well-formed custom
// layout string with a correct checksum. tmux 3.3a's server crashes on
// some malformed names, so nothing else is passed through.
func CheckLayout(s string) error {
	for _, b := range BuiltinLayouts {
		if s == b {
			return nil
		}
	}
	if len(s) > maxLayoutLen {
		return fmt.Errorf("layout string is %d bytes long; at most %d are allowed", len(s), maxLayoutLen)
	}
	if len(s) < 6 || s[4] != ',' {
		return errors.New("not a built-in layout name or a layout string")
	}
	sum, err := strconv.ParseUint(s[:4], 16, 16)
	if err != nil {
		return errors.New("layout string must start with a 4-digit hex checksum")
	}
	body := s[5:]
	if got := LayoutChecksum(body); got != uint16(sum) {
		return fmt.Errorf("layout checksum %04x does not match %04x", sum, got)
	}
	p := &layoutParser{s: body}
	if err := p.cell(0); err != nil {
		return err
	}
	if p.i != len(p.s) {
		return fmt.Errorf("unexpected %q at offset %d", p.s[p.i], p.i)
	}
	return nil
}

// LayoutChecksum is tmux's layout_checksum.
func LayoutChecksum(s string) uint16 {
	var csum uint16
	for i := 0; i < len(s); i++ {
		csum = (csum >> 1) + ((csum & 1) << 15)
		csum += uint16(s[i])
	}
	return csum
}

type layoutParser struct {
	s string
	i int
}

func (p *layoutParser) num() error {
	st := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i == st || p.i-st > 6 {
		return fmt.Errorf("expected a number at offset %d", st)
	}
	// tmux's own limit on a window's size (WINDOW_MAXIMUM): larger custom
	// layouts make the server allocate huge grids.
	if v, _ := strconv.Atoi(p.s[st:p.i]); v > MaxLayoutSize {
		return fmt.Errorf("layout size %d at offset %d exceeds %d", v, st, MaxLayoutSize)
	}
	return nil
}

func (p *layoutParser) lit(c byte) error {
	if p.i >= len(p.s) || p.s[p.i] != c {
		return fmt.Errorf("expected %q at offset %d", c, p.i)
	}
	p.i++
	return nil
}

// cell parses WxH,X,Y[,ID] optionally followed by {cells} or [cells].
func (p *layoutParser) cell(depth int) error {
	if depth > 32 {
		return errors.New("layout nested too deeply")
	}
	for _, step := range []func() error{p.num, func() error { return p.lit('x') }, p.num, func() error { return p.lit(',') }, p.num, func() error { return p.lit(',') }, p.num} {
		if err := step(); err != nil {
			return err
		}
	}
	if p.i < len(p.s) && p.s[p.i] == ',' && p.i+1 < len(p.s) && p.s[p.i+1] >= '0' && p.s[p.i+1] <= '9' {
		// Either a pane id (leaf) or the next sibling cell: a sibling has an 'x'.
		save := p.i
		p.i++
		_ = p.num()
		if p.i < len(p.s) && p.s[p.i] == 'x' {
			p.i = save
			return nil
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == '{' || p.s[p.i] == '[') {
		closer := byte('}')
		if p.s[p.i] == '[' {
			closer = ']'
		}
		p.i++
		for {
			if err := p.cell(depth + 1); err != nil {
				return err
			}
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			return p.lit(closer)
		}
	}
	return nil
}
