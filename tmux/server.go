// Package tmux is a typed client for one tmux server reached through a
// transport.Runner. Every command is built as a plain argv (pure functions,
// table-tested); listings go through format strings with one field
// separator and a field-count check; objects are addressed by id.
package tmux

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fleetmux/fleetmux/transport"
)

// Server identifies one tmux server: the executor that reaches its host
// (NewExecutor), a binary and the -L / -S socket selection. Exec, Do and
// Batch are the ways to run commands on it.
type Server struct {
	Executor   Executor
	Bin        string // tmux binary; "" means "tmux" on PATH
	SocketName string // -L
	SocketPath string // -S
}

// BinName returns the binary used for commands.
func (s *Server) BinName() string {
	if s.Bin == "" {
		return "tmux"
	}
	return s.Bin
}

// Prefix returns [bin, -L name, -S path]: the argv every command starts with.
func (s *Server) Prefix() []string {
	argv := []string{s.BinName()}
	if s.SocketName != "" {
		argv = append(argv, "-L", s.SocketName)
	}
	if s.SocketPath != "" {
		argv = append(argv, "-S", s.SocketPath)
	}
	return argv
}

// Argv builds the full argv for a tmux subcommand. -u makes the client
// assume UTF-8 so names with non-ASCII characters round-trip even when the
// MCP client started us without a locale.
func (s *Server) Argv(args ...string) []string {
	p := s.Prefix()
	argv := make([]string, 0, len(p)+1+len(args))
	argv = append(argv, p[0], "-u")
	argv = append(argv, p[1:]...)
	for _, a := range args {
		argv = append(argv, EscapeArg(a))
	}
	return argv
}

// EscapeArg protects an argument from tmux's command-line parser, which
// treats a trailing ';' as a command separator ("echo a;" would arrive as
// "echo a"). A lone ";" is left alone: it is the separator callers use on
// purpose (clear_pane chains two commands).
func EscapeArg(a string) string {
	if len(a) > 1 && a[len(a)-1] == ';' {
		return a[:len(a)-1] + `\;`
	}
	return a
}

// Literal is EscapeArg for a value that must never act as a separator,
// not even a lone ";".
func Literal(a string) string {
	if a == ";" {
		return `\;`
	}
	return a
}

// Output is what one tmux command printed.
type Output struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// Lines splits stdout the way libtmux does: on "\n", trailing empty lines
// dropped, invalid UTF-8 rendered as backslash escapes.
func (o *Output) Lines() []string { return SplitLines(o.Stdout) }

// ErrLines returns stderr split into lines.
func (o *Output) ErrLines() []string { return SplitLines(o.Stderr) }

// SplitLines splits b on "\n", drops trailing empty lines and decodes
// invalid UTF-8 as \xNN escapes.
func SplitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := DecodeBackslash(b)
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// DecodeBackslash decodes b as UTF-8, writing invalid bytes as \xNN.
func DecodeBackslash(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&sb, "\\x%02x", b[0])
			b = b[1:]
			continue
		}
		sb.Write(b[:size])
		b = b[size:]
	}
	return sb.String()
}

// Exec sends cmds to tmux as one request (one tmux client, one round
// trip to a remote host) through the server's Executor and returns what
// it printed. A non-zero exit is not an error here; an error means tmux
// could not be run at all.
func (s *Server) Exec(ctx context.Context, cmds ...Cmd) (*Output, error) {
	if s.Executor == nil {
		return nil, errors.New("tmux: server has no executor")
	}
	out, err := s.Executor.Execute(ctx, s, Request{Cmds: cmds})
	if err != nil {
		var na *NoAnswerError
		switch {
		case errors.Is(err, transport.ErrNotFound):
			return nil, fmt.Errorf("%w: %w", ErrBinaryNotFound, err)
		case errors.Is(err, transport.ErrTimeout) && !errors.As(err, &na):
			return nil, &NoAnswerError{Socket: s.SocketLabel(), After: transport.LocalTimeout, Err: err}
		}
		return nil, err
	}
	return out, nil
}

// socketNamer is an executor that knows which socket path a server's
// requests reach (the native client's: it is the one that connects).
type socketNamer interface {
	socketOf(s *Server) string
}

// SocketLabel names the socket this server's commands reach, for
// errors: its path where the executor can tell (locally), else the -L
// name or "default".
func (s *Server) SocketLabel() string {
	if n, ok := s.Executor.(socketNamer); ok {
		if p := n.socketOf(s); p != "" {
			return p
		}
	}
	switch {
	case s.SocketPath != "":
		return s.SocketPath
	case s.SocketName != "":
		return "-L " + s.SocketName
	}
	return "default"
}

// ParseVersion returns the version `tmux -V` printed ("tmux 3.3a" gives
// "3.3a"; "tmux next-3.4" gives "next-3.4").
func ParseVersion(out []byte) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "tmux "))
}
