package transport

import (
	"errors"
	"fmt"
	"sync"
)

// Limits every runner enforces, locally and remotely.
const (
	// MaxOutput bounds what one command may print, stdout and stderr
	// together. A command that prints more fails with ErrOutputTooLarge:
	// a broken or hostile host cannot grow fleetmux's memory without bound.
	MaxOutput = 64 << 20
	// MaxArgLen is the longest single argument: Linux refuses to exec an
	// argument of 128 KiB or more (MAX_ARG_STRLEN, counting its NUL).
	MaxArgLen = 128<<10 - 1
	// MaxArgvLen bounds an argv's total size, well below ARG_MAX (2 MiB
	// with the environment).
	MaxArgvLen = 1 << 20
)

var (
	// ErrOutputTooLarge reports a command that printed more than MaxOutput.
	ErrOutputTooLarge = errors.New("command output exceeds the limit")
	// ErrArgTooLong reports an argument or argv no exec(2) would accept.
	ErrArgTooLong = errors.New("argument too long")
)

// checkArgv refuses an argv no system could exec: NUL bytes, one
// argument of MaxArgLen bytes or more, or more than MaxArgvLen in all.
func checkArgv(argv []string) error {
	if len(argv) == 0 {
		return ErrEmptyArgv
	}
	total := 0
	for i, a := range argv {
		for j := 0; j < len(a); j++ {
			if a[j] == 0 {
				return fmt.Errorf("argv[%d]: %w", i, ErrNUL)
			}
		}
		if len(a) > MaxArgLen {
			return fmt.Errorf("argv[%d] is %d bytes; at most %d are allowed: %w", i, len(a), MaxArgLen, ErrArgTooLong)
		}
		total += len(a) + 1
	}
	if total > MaxArgvLen {
		return fmt.Errorf("argv is %d bytes; at most %d are allowed: %w", total, MaxArgvLen, ErrArgTooLong)
	}
	return nil
}

// outputBudget is the MaxOutput budget shared by a command's stdout and
// stderr writers.
type outputBudget struct {
	mu       sync.Mutex
	left     int
	onExceed func() // called once, outside the lock, when the budget is spent
}

func newOutputBudget() *outputBudget { return &outputBudget{left: MaxOutput} }

// take reserves n bytes; false once the budget is spent.
func (b *outputBudget) take(n int) bool {
	b.mu.Lock()
	if b.left < 0 {
		b.mu.Unlock()
		return false
	}
	if n > b.left {
		b.left = -1
		f := b.onExceed
		b.mu.Unlock()
		if f != nil {
			f()
		}
		return false
	}
	b.left -= n
	b.mu.Unlock()
	return true
}

func (b *outputBudget) exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left < 0
}

// boundedBuffer collects output up to its budget; past it, Write fails
// (which makes os/exec and io.Copy stop reading). It keeps fixed-size
// chunks and joins them once, into a slice of the exact size: growing one
// slice by append holds the old and the new array at each doubling, so a
// 64 MiB output peaked at about twice that before the join.
type boundedBuffer struct {
	budget *outputBudget
	mu     sync.Mutex
	chunks [][]byte
	n      int
}

// chunkSize is the size of boundedBuffer's chunks: small outputs (most
// tmux replies) take one small chunk; a large one wastes at most a chunk.
const chunkSize = 256 << 10

func (w *boundedBuffer) Write(p []byte) (int, error) {
	if !w.budget.take(len(p)) {
		return 0, ErrOutputTooLarge
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += len(p)
	for rest := p; len(rest) > 0; {
		if k := len(w.chunks); k > 0 {
			last := w.chunks[k-1]
			if room := cap(last) - len(last); room > 0 {
				m := min(room, len(rest))
				w.chunks[k-1] = append(last, rest[:m]...)
				rest = rest[m:]
				continue
			}
		}
		// The first chunk is sized to what arrived (most replies are
		// small); later ones are chunkSize.
		size := chunkSize
		if len(w.chunks) == 0 {
			size = min(chunkSize, max(len(rest), 512))
		}
		w.chunks = append(w.chunks, make([]byte, 0, size))
	}
	return len(p), nil
}

// Bytes returns everything written, in one slice.
func (w *boundedBuffer) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch len(w.chunks) {
	case 0:
		return nil
	case 1:
		return w.chunks[0]
	}
	out := make([]byte, 0, w.n)
	for _, c := range w.chunks {
		out = append(out, c...)
	}
	w.chunks = [][]byte{out}
	return out
}

func errOutputTooLarge() error {
	return fmt.Errorf("%w (%d MiB)", ErrOutputTooLarge, MaxOutput>>20)
}
