package transport

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestQuoteArgvGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		give []string
		want string
	}{
		{"plain", []string{"tmux", "-V"}, `'tmux' '-V'`},
		{"empty", []string{"printf", ""}, `'printf' ''`},
		{"quote", []string{"it's"}, `'it'\''s'`},
		{"only quotes", []string{"''"}, `''\'''\'''`},
		{"space", []string{"a b"}, `'a b'`},
		{"dollar", []string{"$HOME", "$(id)", "`id`"}, "'$HOME' '$(id)' '`id`'"},
		{"newline", []string{"a\nb"}, "'a\nb'"},
		{"backslash", []string{`a\'b`}, `'a\'\''b'`},
		{"assignment word", []string{"A=1", "cmd"}, `'A=1' 'cmd'`},
		{"reserved word", []string{"if"}, `'if'`},
		{"unicode", []string{"héllo 世界"}, `'héllo 世界'`},
		{"dash", []string{"--", "-x"}, `'--' '-x'`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := QuoteArgv(tt.give)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("QuoteArgv(%q) = %q, want %q", tt.give, got, tt.want)
			}
		})
	}
}

func TestQuoteArgvErrors(t *testing.T) {
	if _, err := QuoteArgv(nil); !errors.Is(err, ErrEmptyArgv) {
		t.Errorf("nil argv: err = %v, want ErrEmptyArgv", err)
	}
	_, err := QuoteArgv([]string{"tmux", "a\x00b"})
	if !errors.Is(err, ErrNUL) {
		t.Fatalf("NUL: err = %v, want ErrNUL", err)
	}
	if !strings.Contains(err.Error(), "argv[1]") {
		t.Errorf("NUL error %q does not name the argument", err)
	}
}

// parseSingleQuoted is a tiny POSIX word parser for what QuoteArgv emits:
// words of single-quoted strings and backslash-escaped characters separated
// by single spaces.
func parseSingleQuoted(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			if !inWord {
				return nil, errors.New("double space")
			}
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("trailing backslash")
			}
			cur.WriteByte(s[i+1])
			i++
			inWord = true
		default:
			return nil, errors.New("bare character " + string(c))
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// shellArgv runs the test binary through `shell -c LINE` and returns the
// argv it received (without argv[0]).
func shellArgv(t testing.TB, shell string, args []string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	line, err := QuoteArgv(append([]string{exe}, args...))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(shell, "-c", line)
	// GORACE: a -race binary otherwise sleeps 1s at exit.
	cmd.Env = append(os.Environ(), argvHelperEnv+"=1", "GORACE=atexit_sleep_ms=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -c %q: %v: %s", shell, line, err, stderr.Bytes())
	}
	got := []string{}
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if l == "" && len(out) == 0 {
			break
		}
		b, err := hex.DecodeString(l)
		if err != nil {
			t.Fatalf("helper output %q: %v", out, err)
		}
		got = append(got, string(b))
	}
	return got
}

func shells(t testing.TB) []string {
	var out []string
	for _, s := range []string{"/bin/sh", "bash", "dash", "zsh", "ksh", "busybox"} {
		if p, err := exec.LookPath(s); err == nil && !slices.Contains(out, p) {
			if s == "busybox" {
				continue // needs "busybox sh"; not worth special-casing
			}
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("no POSIX shell found")
	}
	return out
}

var hostileArgs = []string{
	"", " ", "'", "''", `"`, `\`, `\'`, "$", "$HOME", "${HOME}", "$(id)", "`id`",
	";", "a;b", "&&", "|", ">", "<", "*", "?", "[a]", "~", "~root", "#", "!",
	"a\nb", "\n", "\r\n", "\t", "-", "--", "-n", "-e", "%s", "%%", "héllo", "世界",
	"\x1b[31mred\x1b[0m", "\xff\xfe", "A=1", "if", "{", "}", "(", ")",
	"#(touch /tmp/x)", "it's a 'test'",
}

func TestQuoteArgvShellRoundTrip(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh, func(t *testing.T) {
			got := shellArgv(t, sh, hostileArgs)
			if !slices.Equal(got, hostileArgs) {
				t.Errorf("round trip through %s:\n got %q\nwant %q", sh, got, hostileArgs)
			}
		})
	}
	line, err := QuoteArgv(hostileArgs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseSingleQuoted(line)
	if err != nil || !slices.Equal(got, hostileArgs) {
		t.Errorf("parse back: %q, %v", got, err)
	}
}

// FuzzQuoteArgv splits data at sep into an argv, quotes it, and checks that
// the POSIX parser and every installed shell give back the same argv.
func FuzzQuoteArgv(f *testing.F) {
	f.Add([]byte("tmux\x01-V"), byte(1))
	f.Add([]byte("it's\x00nul"), byte('|'))
	f.Add([]byte(strings.Join(hostileArgs, "\x02")), byte(2))
	sh := shells(f)
	f.Fuzz(func(t *testing.T, data []byte, sep byte) {
		var argv []string
		for _, a := range bytes.Split(data, []byte{sep}) {
			argv = append(argv, string(a))
		}
		line, err := QuoteArgv(argv)
		if bytes.IndexByte(data, 0) >= 0 && sep != 0 {
			if !errors.Is(err, ErrNUL) {
				t.Fatalf("argv with NUL: err = %v, want ErrNUL", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("QuoteArgv(%q): %v", argv, err)
		}
		back, err := parseSingleQuoted(line)
		if err != nil || !slices.Equal(back, argv) {
			t.Fatalf("parse back %q: got %q, %v; want %q", line, back, err, argv)
		}
		for _, s := range sh {
			if got := shellArgv(t, s, argv); !slices.Equal(got, argv) {
				t.Fatalf("%s: got %q, want %q", s, got, argv)
			}
		}
	})
}

// TestLoopsNeedNoQuoting: the only text a login shell ever parses is the
// command that starts sh with channelBoot, which then reads channelLoop or
// sessionLoop from stdin. channelBoot may not hold
// a character that some login shell treats specially inside single quotes
// (fish: backslash; csh/tcsh: '!' and newline), or a single quote.
func TestLoopsNeedNoQuoting(t *testing.T) {
	if i := strings.IndexAny(channelBoot, "'\\\n!"); i >= 0 {
		t.Errorf("channelBoot holds %q at %d", channelBoot[i], i)
	}
	for name, loop := range map[string]string{"channelLoop": channelLoop, "sessionLoop": sessionLoop} {
		if strings.Contains(loop, "\n") {
			t.Errorf("%s is sent as one line; it must not hold a newline", name)
		}
	}
}
