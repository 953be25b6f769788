package tmux

import "strings"

// EscapeFormatTime escapes s so that tmux's format_expand_time (the
// expander pipe-pane, among others, runs over its argument) yields s
// unchanged.
//
// Two rewrites happen in tmux: the "#" format expander and strftime. A
// maximal run of "#" is doubled, because the expander collapses "##" to
// "#"; a run followed by "[" is left alone, because tmux copies style
// sequences ("#[...]", "##[...]") through verbatim. Every "%" becomes
// "%%", strftime's literal percent.
//
// Reference: https://man.openbsd.org/tmux.1#FORMATS
func EscapeFormatTime(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		switch s[i] {
		case '#':
			j := i
			for j < len(s) && s[j] == '#' {
				j++
			}
			run := s[i:j]
			b.WriteString(run)
			if j >= len(s) || s[j] != '[' {
				b.WriteString(run)
			}
			i = j
		case '%':
			b.WriteString("%%")
			i++
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// PipeCommand is the shell command pipe_pane hands to `tmux pipe-pane`:
// `cat >> PATH` (or `cat > PATH` when not appending), with PATH quoted for
// the shell and then escaped for tmux's format expander.
func PipeCommand(path string, appendTo bool) string {
	redirect := ">"
	if appendTo {
		redirect = ">>"
	}
	return "cat " + redirect + " " + EscapeFormatTime(ShellQuote(path))
}
