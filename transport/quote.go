package transport

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNUL reports an argument that contains a NUL byte. No shell and no
// exec(2) can pass one, so such an argv is refused rather than truncated.
var ErrNUL = errors.New("argument contains a NUL byte")

// QuoteArgv turns argv into one command line for a POSIX shell (sshd runs
// the user's login shell as `$SHELL -c LINE`). It is the only place in
// fleetmux where an argv becomes a line for a login shell. (The text tmux
// itself hands to sh, pipe-pane's command and run_command's trailer typed
// into a pane, is built in package tmux with Python's shlex rules, as the
// reference server types it.)
//
// Every element is wrapped in single quotes, inside which a POSIX shell
// treats every byte literally. A single quote itself becomes close quote,
// backslash-quote, reopen quote; the empty string becomes a pair of quotes:
//
//	it's   ->  'it'\''s'
//	(empty) ->  ''
//
// Nothing is left bare, so words such as `if`, `a=b` or `~x` in any
// position mean only themselves. Any byte other than NUL is passed through
// unchanged: newlines, $(...), backticks, ;, invalid UTF-8, leading dashes.
//
// The result is correct for sh, dash, bash, ksh and zsh. Shells with other
// quoting rules (csh/tcsh: newlines and `!`; fish: backslashes) may
// misread some arguments; the command-channel fast path avoids depending on
// the login shell beyond starting `sh`.
func QuoteArgv(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", ErrEmptyArgv
	}
	n := 0
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", fmt.Errorf("transport: argv[%d]: %w", i, ErrNUL)
		}
		n += len(a) + 3
	}
	var b strings.Builder
	b.Grow(n)
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('\'')
		for {
			j := strings.IndexByte(a, '\'')
			if j < 0 {
				break
			}
			b.WriteString(a[:j])
			b.WriteString(`'\''`)
			a = a[j+1:]
		}
		b.WriteString(a)
		b.WriteByte('\'')
	}
	return b.String(), nil
}
