package mcp

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/surface"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

func (e *testEnv) prompt(name string, args map[string]string) string {
	e.t.Helper()
	res, err := e.cs.GetPrompt(e.t.Context(), &sdk.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("prompts/get %s: %v", name, err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
		e.t.Fatalf("%s: messages %+v", name, res.Messages)
	}
	tc, ok := res.Messages[0].Content.(*sdk.TextContent)
	if !ok || tc.Text == "" {
		e.t.Fatalf("%s: content %#v", name, res.Messages[0].Content)
	}
	return tc.Text
}

func TestPromptsList(t *testing.T) {
	for _, asTools := range []bool{false, true} {
		e := newEnv(t, withSettings(Settings{Safety: TierDestructive, SuppressHistory: true, WaitMax: 30, PromptsAsTools: asTools}))
		res, err := e.cs.ListPrompts(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range res.Prompts {
			names = append(names, p.Name)
			if p.Title != "" || p.Description == "" {
				t.Errorf("%s: title %q description %q", p.Name, p.Title, p.Description)
			}
		}
		if strings.Join(names, ",") != "run_and_wait,diagnose_failing_pane,build_dev_workspace,interrupt_gracefully" {
			t.Fatalf("prompts %v", names)
		}
		args := res.Prompts[0].Arguments
		if len(args) != 3 || args[0].Name != "command" || !args[0].Required || args[1].Name != "pane_id" || !args[1].Required ||
			args[2].Name != "timeout" || args[2].Required || !strings.Contains(args[2].Description, `{"type":"number"}`) {
			t.Fatalf("run_and_wait arguments %+v %+v %+v", args[0], args[1], args[2])
		}
		// Prompts-as-tools stays hidden under the tier gate.
		tools, err := e.cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			if tl.Name == "list_prompts" || tl.Name == "get_prompt" {
				t.Fatalf("prompts-as-tools exposed %s (asTools=%v)", tl.Name, asTools)
			}
		}
	}
}

func TestPromptRunAndWait(t *testing.T) {
	e := newEnv(t)
	text := e.prompt("run_and_wait", map[string]string{"command": "pytest", "pane_id": "%1", "timeout": "30"})
	for _, want := range []string{"run_command", "exit_status", "timed_out", "output", "result = run_command(", "    timeout=30.0,\n", "max_lines=100", "effective_timeout", "send_keys_batch", "capture_since", "pane_id='%1',"} {
		if !strings.Contains(text, want) {
			t.Errorf("run_and_wait lacks %q", want)
		}
	}
	for _, bad := range []string{"wait_for_channel", "tmux wait-for -S", "send_keys(", "capture_pane(", "libtmux_mcp_wait_", "suppress_history="} {
		if strings.Contains(text, bad) {
			t.Errorf("run_and_wait contains %q", bad)
		}
	}
	if def := e.prompt("run_and_wait", map[string]string{"command": "pytest", "pane_id": "%1"}); !strings.Contains(def, "    timeout=60.0,\n") {
		t.Errorf("default timeout not 60.0:\n%s", def)
	}
	if got := e.prompt("run_and_wait", map[string]string{"command": "x", "pane_id": "%1", "timeout": "2.5"}); !strings.Contains(got, "timeout=2.5,") {
		t.Errorf("timeout 2.5:\n%s", got)
	}
	cases := []struct {
		command   string
		multiline bool
	}{
		{"python -c 'print(1)'", false},
		{"printf first\nprintf second", true},
		{"printf first\rprintf second", true},
		{`printf first\nprintf second`, false},
		{`echo "a'b" \ done`, false},
		{`printf 'a\n'`, false},
		{"tab\there\u00a0\u2028", false},
	}
	for _, tc := range cases {
		text := e.prompt("run_and_wait", map[string]string{"command": tc.command, "pane_id": "%1"})
		var line string
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "command=") {
				line = l
				break
			}
		}
		_, payload, _ := strings.Cut(line, "command=")
		payload = strings.TrimSpace(strings.TrimSuffix(payload, ","))
		if got, ok := promptParsePyStr(payload); !ok || got != tc.command {
			t.Errorf("command %q rendered as %s (parsed %q, %v)", tc.command, payload, got, ok)
		}
		if strings.Contains(text, "suppress_history=False,") != tc.multiline || strings.Contains(text, "may be recorded by the shell") != tc.multiline {
			t.Errorf("command %q: history warning present=%v, want %v", tc.command, !tc.multiline, tc.multiline)
		}
		sample := strings.SplitN(strings.SplitN(text, "```python\n", 2)[1], "\n```", 2)[0]
		if !strings.HasPrefix(sample, "result = run_command(\n") || !strings.HasSuffix(sample, ")") {
			t.Errorf("code sample:\n%s", sample)
		}
	}
}

// promptParsePyStr evaluates a Python string literal as pyRepr writes them.
func promptParsePyStr(lit string) (string, bool) {
	if len(lit) < 2 || (lit[0] != '\'' && lit[0] != '"') || lit[len(lit)-1] != lit[0] {
		return "", false
	}
	q := lit[0]
	body := lit[1 : len(lit)-1]
	var sb strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == q || c == '\n' || c == '\r' {
			return "", false // unescaped quote or raw newline ends the literal early
		}
		if c != '\\' {
			sb.WriteByte(c)
			continue
		}
		i++
		if i >= len(body) {
			return "", false
		}
		switch body[i] {
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case '\\', '\'', '"':
			sb.WriteByte(body[i])
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[body[i]]
			if i+n >= len(body) {
				return "", false
			}
			v, err := strconv.ParseUint(body[i+1:i+1+n], 16, 32)
			if err != nil {
				return "", false
			}
			sb.WriteRune(rune(v))
			i += n
		default:
			return "", false
		}
	}
	return sb.String(), true
}

func TestPromptOtherRecipes(t *testing.T) {
	e := newEnv(t)
	diag := e.prompt("diagnose_failing_pane", map[string]string{"pane_id": "%1"})
	for _, want := range []string{"snapshot_pane", "capture_since", "cursor", "max_lines=None"} {
		if !strings.Contains(diag, want) {
			t.Errorf("diagnose_failing_pane lacks %q", want)
		}
	}
	ws := e.prompt("build_dev_workspace", map[string]string{"session_name": "dev"})
	for _, want := range []string{"patterns=null", `create_session(session_name="dev")`, `keys='watch -n 1 date'`, `direction="below"`, `direction="right"`, "timeout=3.0"} {
		if !strings.Contains(ws, want) {
			t.Errorf("build_dev_workspace lacks %q", want)
		}
	}
	for _, bad := range []string{"wait for the prompt", `\$ |\# |\% `, `send_keys(pane_id="%B", keys="")`} {
		if strings.Contains(ws, bad) {
			t.Errorf("build_dev_workspace contains %q", bad)
		}
	}
	if got := e.prompt("build_dev_workspace", map[string]string{"session_name": "dev", "log_command": "tail -f /var/log/syslog"}); !strings.Contains(got, "keys='tail -f /var/log/syslog'") {
		t.Errorf("log_command not used:\n%s", got)
	}
	intr := e.prompt("interrupt_gracefully", map[string]string{"pane_id": "%3"})
	if !strings.Contains(strings.Join(strings.Fields(intr), " "), "do NOT escalate automatically") {
		t.Error("interrupt_gracefully allows escalation")
	}
	if !strings.Contains(intr, "pane_current_command") || !strings.Contains(intr, "enter=False") || !strings.Contains(intr, "regex=True") || !strings.Contains(intr, "timeout=5.0") {
		t.Errorf("interrupt_gracefully:\n%s", intr)
	}
	for _, l := range strings.Split(intr, "\n") {
		if strings.Contains(l, "wait_for_text(") && (strings.Contains(l, "stop=") || strings.Contains(l, "^C")) {
			t.Errorf("wait call with a stop list: %s", l)
		}
	}
}

// TestPromptToolCallsUseRealParameters extracts every tool(...) call
// shown in a prompt and checks its keyword names against the surface.
func TestPromptToolCallsUseRealParameters(t *testing.T) {
	e := newEnv(t)
	params := map[string]map[string]bool{}
	for _, ts := range surface.Spec.Tools {
		params[ts.Name] = map[string]bool{}
		for _, p := range ts.Params {
			params[ts.Name][p.Name] = true
		}
	}
	kw := regexp.MustCompile(`(?:^|[(,])\s*([A-Za-z_]\w*)\s*=`)
	samples := []struct {
		name string
		args map[string]string
	}{
		{"run_and_wait", map[string]string{"command": "pytest", "pane_id": "%1", "timeout": "30.0"}},
		{"diagnose_failing_pane", map[string]string{"pane_id": "%1"}},
		{"build_dev_workspace", map[string]string{"session_name": "dev"}},
		{"interrupt_gracefully", map[string]string{"pane_id": "%1"}},
	}
	for _, s := range samples {
		text := e.prompt(s.name, s.args)
		calls := 0
		for tool, valid := range params {
			for i := 0; ; {
				j := strings.Index(text[i:], tool+"(")
				if j < 0 {
					break
				}
				start := i + j
				i = start + len(tool) + 1
				if start > 0 && (promptIdentByte(text[start-1])) {
					continue
				}
				inner, ok := promptCallArgs(text[start+len(tool):])
				if !ok {
					continue
				}
				calls++
				for _, m := range kw.FindAllStringSubmatch(promptStripStrings(inner), -1) {
					if !valid[m[1]] {
						t.Errorf("%s: %s(%s=...) is not a parameter of %s", s.name, tool, m[1], tool)
					}
				}
			}
		}
		if calls == 0 {
			t.Errorf("%s shows no tool calls", s.name)
		}
	}
}

func promptIdentByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// promptCallArgs returns the text between a call's parentheses (s starts at
// "("), honouring quotes.
func promptCallArgs(s string) (string, bool) {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
			if depth == 0 {
				return s[1:i], true
			}
		}
	}
	return "", false
}

var promptStrRE = regexp.MustCompile(`'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"`)

func promptStripStrings(s string) string { return promptStrRE.ReplaceAllString(s, `""`) }

func TestPromptErrors(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		args map[string]string
		want string
	}{
		{"run_and_wait", map[string]string{"pane_id": "%1"}, "Missing required arguments: {'command'}"},
		{"run_and_wait", map[string]string{"command": "x", "pane_id": "%1", "timeout": "soon"}, "'timeout'"},
		{"diagnose_failing_pane", map[string]string{"pane_id": "%1", "extra": "1"}, "'extra'"},
	} {
		_, err := e.cs.GetPrompt(t.Context(), &sdk.GetPromptParams{Name: tc.name, Arguments: tc.args})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || !strings.Contains(we.Message, tc.want) {
			t.Errorf("%s %v: error %v, want %q", tc.name, tc.args, err, tc.want)
		}
	}
}

func TestPromptStrLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"printf 'a\\n'": `"printf 'a\\n'"`,
		"tab\there":     `'tab\there'`,
		"nb\u00a0sp":    `'nb\xa0sp'`,
		"ls\u2028x":     `'ls\u2028x'`,
		"bell\x07":      `'bell\x07'`,
		"del\x7f":       `'del\x7f'`,
		"emoji😀":        `'emoji😀'`,
		"both ' and \"": `'both \' and "'`,
		"plain":         `'plain'`,
		"é":             `'é'`,
		"\u200b":        `'\u200b'`,
		"\U000e0001":    `'\U000e0001'`,
	} {
		if got := pyfmt.Repr(in); got != want {
			t.Errorf("pyfmt.Repr(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestPromptFloatRepr(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{60, "60.0"}, {30.5, "30.5"}, {0.1, "0.1"}, {1234567.5, "1234567.5"}, {1e16, "1e+16"},
		{1.5e-5, "1.5e-05"}, {0.0001, "0.0001"}, {-2, "-2.0"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"},
		{123456789012345678, "1.2345678901234568e+17"}, {1e-310, "1e-310"}, {math.Inf(1), "inf"}, {math.NaN(), "nan"},
		{9999999999999998, "9999999999999998.0"},
	} {
		if got := pyfmt.Float(tc.f); got != tc.want {
			t.Errorf("pyfmt.Float(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

// TestPromptDocsSampleRender keeps the published sample render of
// interrupt_gracefully in docs/prompts.md equal to the server's output.
func TestPromptDocsSampleRender(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "docs", "prompts.md"))
	if err != nil {
		t.Skipf("docs/prompts.md not present: %v", err)
	}
	m := regexp.MustCompile("(?s)\\*\\*Sample render\\*\\* \\(``pane_id=\"%1\"``\\):\n\n````markdown\n(.*?)````").FindSubmatch(page)
	if m == nil {
		t.Skip("docs/prompts.md has no interrupt_gracefully sample render block")
	}
	e := newEnv(t)
	live := strings.TrimSpace(e.prompt("interrupt_gracefully", map[string]string{"pane_id": "%1"}))
	if strings.TrimSpace(string(m[1])) != live {
		t.Fatalf("docs/prompts.md sample render drifted from the server:\n%s", live)
	}
}
