// Package transport runs one argv on a host and returns its output.
//
// It knows nothing about tmux: callers hand it a complete argv (binary
// first) and get back stdout, stderr and the exit status. The local
// implementation uses os/exec; the SSH implementation (ssh.go) quotes the
// argv exactly once, at the remote shell boundary.
package transport

import (
	"context"
	"errors"
)

// Result is what one command produced.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// Runner runs one argv. A non-zero exit status is not an error: it is
// reported in Result.ExitCode. An error means the command could not be run
// at all (binary missing, connection lost, context cancelled).
type Runner interface {
	Run(ctx context.Context, argv []string, stdin []byte) (Result, error)
}

// ErrNotFound reports that the binary named by argv[0] does not exist.
var ErrNotFound = errors.New("executable not found")

// ErrEmptyArgv reports a call without a binary.
var ErrEmptyArgv = errors.New("empty argv")

// ErrUnreachable reports that the host could not be reached.
var ErrUnreachable = errors.New("host unreachable")
