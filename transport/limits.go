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
// (which makes os/exec and io.Copy stop reading).
type boundedBuffer struct {
	budget *outputBudget
	mu     sync.Mutex
	buf    []byte
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	if !w.budget.take(len(p)) {
		return 0, ErrOutputTooLarge
	}
	w.mu.Lock()
	w.buf = append(w.buf, p...)
	w.mu.Unlock()
	return len(p), nil
}

func (w *boundedBuffer) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf
}

func errOutputTooLarge() error {
	return fmt.Errorf("%w (%d MiB)", ErrOutputTooLarge, MaxOutput>>20)
}
