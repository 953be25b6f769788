// Package prompts holds fleetmux's four MCP prompts: workflow recipes
// rendered as one user message, with the arguments and the argument
// errors of the reference's prompts.
package prompts

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/mcp/surface"
)

// The wording is ours; the tool calls the recipes show use real
// parameter names and the properties the reference's tests pin.
//
// LIBTMUX_MCP_PROMPTS_AS_TOOLS=1 makes the reference register list_prompts
// and get_prompt tools, but they carry no tier tag, so its production
// tier gate hides them. fleetmux therefore exposes no extra tools for the
// setting (docs/compatibility.md).

type promptDef struct {
	name        string
	description string
	render      func(args map[string]string) string
}

var promptDefs = []promptDef{
	{"run_and_wait", "Run one shell command in a pane with run_command and read its exit status and output from the typed result.", renderRunAndWait},
	{"diagnose_failing_pane", "Collect a pane's screen, cursor and recent output, then propose a root cause without running anything.", renderDiagnoseFailingPane},
	{"build_dev_workspace", "Create a three-pane session: editor on top, a shell bottom-left and a log command bottom-right.", renderBuildDevWorkspace},
	{"interrupt_gracefully", "Send Ctrl-C to a pane and check whether the foreground command actually stopped, without escalating.", renderInterruptGracefully},
}

// promptArgNote is the framework's hint on non-string prompt arguments.
const promptNumberNote = `Provide as a JSON string matching the following schema: {"type":"number"}`

// Register adds the four recipes to srv.
func Register(srv *sdk.Server) {
	for _, pd := range promptDefs {
		ps := promptSpecByName(pd.name)
		p := &sdk.Prompt{
			Name:        pd.name,
			Description: pd.description,
			Meta:        sdk.Meta{"fastmcp": map[string]any{"tags": []string{}}},
		}
		for _, a := range ps.Arguments {
			arg := &sdk.PromptArgument{Name: a.Name, Required: a.Required}
			if a.JSONType == "number" {
				arg.Description = promptNumberNote
			}
			p.Arguments = append(p.Arguments, arg)
		}
		srv.AddPrompt(p, promptHandler(pd, ps))
	}
}

// Names lists the prompts in registration order.
func Names() []string {
	names := make([]string, len(promptDefs))
	for i, pd := range promptDefs {
		names[i] = pd.name
	}
	return names
}

func promptSpecByName(name string) surface.Prompt {
	for _, p := range surface.Spec.Prompts {
		if p.Name == name {
			return p
		}
	}
	panic("prompts: prompt not in surface: " + name)
}

// promptHandler checks and converts the string arguments, applies
// defaults and renders the recipe.
func promptHandler(pd promptDef, ps surface.Prompt) sdk.PromptHandler {
	return func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		given := map[string]string{}
		if req.Params != nil {
			for k, v := range req.Params.Arguments {
				given[k] = v
			}
		}
		fail := func(format string, a ...any) error {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Error rendering prompt %s: ", pyfmt.Repr(pd.name)) + fmt.Sprintf(format, a...)}
		}
		var missing []string
		known := map[string]bool{}
		args := map[string]string{}
		for _, a := range ps.Arguments {
			known[a.Name] = true
			v, ok := given[a.Name]
			if !ok {
				if a.Required {
					missing = append(missing, pyfmt.Repr(a.Name))
					continue
				}
				switch d := a.Default.(type) {
				case string:
					v = d
				case float64:
					v = pyfmt.Float(d)
				}
				args[a.Name] = v
				continue
			}
			if a.JSONType == "number" {
				f, ok := promptFloat(v)
				if !ok {
					return nil, fail("could not convert argument %s with value %s to a number", pyfmt.Repr(a.Name), pyfmt.Repr(v))
				}
				v = pyfmt.Float(f)
			}
			args[a.Name] = v
		}
		if len(missing) > 0 {
			return nil, fail("Missing required arguments: {%s}", strings.Join(missing, ", "))
		}
		for k := range given {
			if !known[k] {
				return nil, fail("unexpected argument %s", pyfmt.Repr(k))
			}
		}
		return &sdk.GetPromptResult{
			Description: pd.description,
			Messages:    []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: pd.render(args)}}},
		}, nil
	}
}

// promptFloat converts a prompt argument to a float the way the reference's
// framework does: a JSON number or numeric string.
func promptFloat(v string) (float64, bool) {
	t := strings.TrimSpace(v)
	if strings.ContainsAny(t, "xX_") {
		return 0, false // no hex floats or digit separators
	}
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		if u, err := strconv.Unquote(t); err == nil {
			t = strings.TrimSpace(u)
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

func renderRunAndWait(a map[string]string) string {
	command, pane := a["command"], a["pane_id"]
	multiline := strings.ContainsAny(command, "\n\r")
	history, warning := "", ""
	if multiline {
		history = "    suppress_history=False,\n"
		warning = "\n\nBecause the command spans several lines, history suppression is switched off\nfor it, so the command may be recorded by the shell in its history."
	}
	return "Run a shell command in tmux pane " + pane + ", let it finish, and work from the\n" +
		"structured result rather than from the screen:\n" +
		"\n" +
		"```python\n" +
		"result = run_command(\n" +
		"    pane_id=" + pyfmt.Repr(pane) + ",\n" +
		"    command=" + pyfmt.Repr(command) + ",\n" +
		history +
		"    timeout=" + a["timeout"] + ",\n" +
		"    max_lines=100,\n" +
		")\n" +
		"```" + warning + "\n" +
		"\n" +
		"Decide what happened from `result.exit_status` (null if the command did not\n" +
		"finish), `result.timed_out` and `result.output`, which holds the last lines the\n" +
		"command printed. run_command already knows when the command is done and keeps\n" +
		"the tail of its output, so there is no need to type the command and then poll\n" +
		"the screen for it.\n" +
		"\n" +
		"The server clamps `timeout` to its wait ceiling (30 s unless the operator\n" +
		"changed it); `result.effective_timeout` reports the value it really used. A\n" +
		"command that needs more time keeps running in the pane, so simply call again.\n" +
		"\n" +
		"For interactive programs, keystrokes, or work that depends on shell state\n" +
		"between steps, type input with `send_keys` or `send_keys_batch` and read what\n" +
		"appears afterwards with `capture_since`.\n"
}

func renderDiagnoseFailingPane(a map[string]string) string {
	pane := a["pane_id"]
	return "Something in tmux pane " + pane + " is failing. Work out why, step by step:\n" +
		"\n" +
		"1. `snapshot_pane(pane_id=\"" + pane + "\")` returns the visible text together\n" +
		"   with the cursor position, the pane mode and the scroll position.\n" +
		"2. When the snapshot reports truncated content, read it again with\n" +
		"   `max_lines=None` to get everything.\n" +
		"3. To follow the pane over several turns, call\n" +
		"   `capture_since(pane_id=\"" + pane + "\")` once, keep the cursor it returns\n" +
		"   and hand it to each later `capture_since(cursor=...)` call, so you only read\n" +
		"   new output.\n" +
		"4. Find the last command that ran (the prompt line and the line just above it\n" +
		"   usually show it) and the last non-empty line of its output.\n" +
		"5. State a likely root cause and the smallest command that would confirm it.\n" +
		"   Do not run anything yet: present the plan first.\n"
}

func renderBuildDevWorkspace(a map[string]string) string {
	name, logCmd := a["session_name"], a["log_command"]
	return "Build a development workspace in a new session named " + pyfmt.Repr(name) + ":\n" +
		"an editor across the top, a shell bottom-left and a log view bottom-right.\n" +
		"\n" +
		"1. `create_session(session_name=\"" + name + "\")` makes the session with one\n" +
		"   pane, the editor. Remember its `active_pane_id` as `%A`.\n" +
		"2. `split_window(pane_id=\"%A\", direction=\"below\")` adds the lower half, the\n" +
		"   shell. Remember the returned `pane_id` as `%B`.\n" +
		"3. `split_window(pane_id=\"%B\", direction=\"right\")` splits the lower half\n" +
		"   again for the logs. Remember the returned `pane_id` as `%C`.\n" +
		"4. Start the programs with `send_keys`: `send_keys(pane_id=\"%A\", keys=\"vim\")`\n" +
		"   and `send_keys(pane_id=\"%C\", keys=" + pyfmt.Repr(logCmd) + ")`. Pane `%B` stays\n" +
		"   at its new shell; it needs no input. There is no need to pause first: tmux\n" +
		"   queues the keystrokes in the pane's terminal even while the shell is still\n" +
		"   starting, whatever the shell is.\n" +
		"5. If you want confirmation that a program started, call\n" +
		"   `wait_for_text(pane_id=\"%A\", patterns=null, timeout=3.0)` (and the same for\n" +
		"   `%C`). Without patterns it simply reports whether new output appeared, which\n" +
		"   works for an editor screen or a log stream alike, with no shell-specific\n" +
		"   pattern to guess.\n" +
		"\n" +
		"Keep addressing panes by their ids (`%N`) from here on; ids survive layout\n" +
		"changes, whereas names and indexes can change.\n"
}

func renderInterruptGracefully(a map[string]string) string {
	pane := a["pane_id"]
	return "Interrupt the command running in tmux pane " + pane + " and confirm that the shell\n" +
		"is back in control:\n" +
		"\n" +
		"1. `get_pane_info(pane_id=\"" + pane + "\")`: write down `pane_current_command`.\n" +
		"   Comparing it before and after is the dependable way to tell whether the\n" +
		"   interrupt worked.\n" +
		"2. `send_keys(pane_id=\"" + pane + "\", keys=\"C-c\", literal=False, enter=False)`:\n" +
		"   tmux sends the key as Ctrl-C, which delivers SIGINT.\n" +
		"3. `wait_for_text(pane_id=\"" + pane + "\", patterns=[\"[$#%>]\\\\s*$\"], regex=True, timeout=5.0)`\n" +
		"   waits for a typical prompt character at the end of a line; adapt the pattern\n" +
		"   to the user's prompt if it looks different. Give no stop patterns: the\n" +
		"   terminal echoes the interrupt whether or not the program exits, so a stop\n" +
		"   pattern on that echo would turn a successful interrupt into a failure.\n" +
		"4. `get_pane_info(pane_id=\"" + pane + "\")` again. If `pane_current_command` is\n" +
		"   a shell now, the interrupt worked, even if the wait above timed out on a\n" +
		"   prompt it did not recognise.\n" +
		"5. If the command is still the same, the program is ignoring SIGINT. Stop there\n" +
		"   and ask the user what to do next; do NOT escalate automatically to SIGQUIT,\n" +
		"   kill_pane or any other harsher signal.\n"
}
