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

// Server identifies one tmux server: a runner (which host), a binary and
// the -L / -S socket selection.
type Server struct {
	Runner     transport.Runner
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

// Run executes one tmux subcommand. A non-zero exit is not an error here;
// an error means tmux could not be run at all.
func (s *Server) Run(ctx context.Context, args ...string) (*Output, error) {
	return s.RunInput(ctx, nil, args...)
}

// RunInput is Run with bytes on stdin.
func (s *Server) RunInput(ctx context.Context, stdin []byte, args ...string) (*Output, error) {
	if s.Runner == nil {
		return nil, errors.New("tmux: server has no runner")
	}
	argv := s.Argv(args...)
	res, err := s.Runner.Run(ctx, argv, stdin)
	if err != nil {
		var na *NoAnswerError
		switch {
		case errors.Is(err, transport.ErrNotFound):
			return nil, fmt.Errorf("%w: %w", ErrBinaryNotFound, err)
		case errors.Is(err, transport.ErrTimeout) && !errors.As(err, &na):
			return nil, &NoAnswerError{Socket: s.socketLabel(argv), After: transport.LocalTimeout, Err: err}
		}
		return nil, err
	}
	return &Output{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}

// socketNamer is a runner that knows which socket path an argv reaches
// (the native client: it is the one that connects).
type socketNamer interface {
	socketOf(argv []string) string
}

// socketLabel names the socket argv goes to, for errors: its path where
// the runner can tell, else what the argv says.
func (s *Server) socketLabel(argv []string) string {
	if n, ok := s.Runner.(socketNamer); ok {
		if p := n.socketOf(argv); p != "" {
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

// SocketLabel names the socket this server's commands reach: its path
// where it is known (locally), else the -L name or "default".
func (s *Server) SocketLabel() string { return s.socketLabel(s.Argv("list-sessions")) }

// Cmd runs a subcommand given as plain arguments and turns any stderr
// output into a *CommandError, as libtmux's checked commands do. Tools
// build commands with the constructors of commands.go and use Do.
func (s *Server) Cmd(ctx context.Context, args ...string) ([]string, error) {
	return s.Do(ctx, cmd(args...))
}

func subcommand(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// IsAlive reports whether the server answers list-sessions with exit 0.
func (s *Server) IsAlive(ctx context.Context) (bool, error) {
	out, err := s.Run(ctx, "list-sessions", "-F", "#{session_id}")
	if err != nil {
		return false, err
	}
	return out.ExitCode == 0, nil
}

// ParseVersion returns the version `tmux -V` printed ("tmux 3.3a" gives
// "3.3a"; "tmux next-3.4" gives "next-3.4").
func ParseVersion(out []byte) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "tmux "))
}
