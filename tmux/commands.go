package tmux

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Cmd is one tmux command: its name and arguments, without the tmux
// binary and socket flags (the Server adds those). Build one with the
// constructors below, one per tmux command; callers never spell a flag.
// Several commands go to tmux as one request with Server.Exec, Server.Do
// or Server.Batch (tmux's "cmd1 ; cmd2" command list).
type Cmd struct {
	args []string
	// unnested: tmux refuses this command when TMUX is set (new-session
	// "nested" in a session), so it runs with TMUX removed (see
	// Request.unnested).
	unnested bool
	// stdin is what the command reads on the tmux client's stdin
	// (LoadBuffer's data); nil for the others.
	stdin []byte
}

// Args returns the command's argv (name first).
func (c Cmd) Args() []string { return append([]string(nil), c.args...) }

// Name is the tmux command name, e.g. "send-keys".
func (c Cmd) Name() string {
	if len(c.args) == 0 {
		return ""
	}
	return c.args[0]
}

func cmd(args ...string) Cmd { return Cmd{args: args} }

// positional appends a command's positional arguments (names, values,
// commands a user chose) after its flags, ending the flags with
// "--" when the first one starts with '-': tmux reads flags up to the
// first argument that does not start with '-', so a name "-k" would be
// taken for a flag. Other argv are left as they were (tmux 3.2 and later
// accept "--" after any command's flags).
func positional(args []string, vals ...string) []string {
	if len(vals) > 0 && strings.HasPrefix(vals[0], "-") {
		args = append(args, "--")
	}
	return append(args, vals...)
}

// guardFailed is the command a guard's false branch names: it does not
// exist, so parsing it fails and if-shell fails with it, which stops the
// rest of the command list (an error inside a branch that parsed would
// stop only the branch).
const guardFailed = "fleetmux-guard-failed"

// Guard is a command that fails, and so stops the rest of its command
// list, unless cond expands to true for target (if-shell -F: a format, no
// shell). cond must be a constant of this package; target an id.
func guard(target, cond string) Cmd {
	return cmd("if-shell", "-F", "-t", target, cond, "", guardFailed)
}

// IfCopyMode runs c only while target is in copy mode or view mode, the
// modes that take copy-mode commands (send-keys -X); elsewhere c would
// fail with "not in a mode", and, unlike a failed command, a command that
// does not run does not stop the rest of a request.
func IfCopyMode(target string, c Cmd) Cmd {
	return IfThen(target, "#{||:#{==:#{pane_mode},copy-mode},#{==:#{pane_mode},view-mode}}", c)
}

// IfThen runs c when cond, expanded for target, is true (if-shell -F).
// c must be built from ids, numbers and fixed words: it is joined back
// into the command string of if-shell's branch, which tmux parses again;
// for anything else c itself is returned, unconditional.
func IfThen(target, cond string, c Cmd) Cmd {
	for _, a := range c.args {
		if a == "" || strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789%@_.:-") != "" {
			return c
		}
	}
	return cmd("if-shell", "-F", "-t", target, cond, strings.Join(c.args, " "))
}

// UniqueWindow fails unless target's window is linked exactly once, so
// that target is listed once by list-panes -a and list-windows -a.
func UniqueWindow(target string) Cmd { return guard(target, "#{==:#{window_linked_sessions},1}") }

// join is the argv of a command list: the commands separated by a lone
// ";" (the one argument EscapeArg leaves as tmux's separator).
func join(cmds []Cmd) []string {
	var argv []string
	for i, c := range cmds {
		if i > 0 {
			argv = append(argv, ";")
		}
		argv = append(argv, c.args...)
	}
	return argv
}

// Do is Exec for checked commands: anything tmux writes to stderr
// becomes a *CommandError, as libtmux's checked commands do. It returns
// stdout's lines.
func (s *Server) Do(ctx context.Context, cmds ...Cmd) ([]string, error) {
	out, err := s.Exec(ctx, cmds...)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(out.Stderr)) > 0 {
		argv := join(cmds)
		return out.Lines(), &CommandError{Sub: subcommand(argv), Stderr: out.ErrLines(), Argv: s.Argv(argv...)}
	}
	return out.Lines(), nil
}

func subcommand(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// ReplyError is output that is not what a command promised to print.
type ReplyError struct{ Err error }

func (e *ReplyError) Error() string { return e.Err.Error() }
func (e *ReplyError) Unwrap() error { return e.Err }

// Created runs cmd on s, which prints the new object's fields
// (new-session, new-window with -P -F), and returns that row; output
// without it is a *ReplyError ("new-session printed no session" for noun
// "session").
func Created(ctx context.Context, s *Server, cmd Cmd, fields []string, noun string) (Attrs, error) {
	lines, err := s.Do(ctx, cmd)
	if err != nil {
		return nil, err
	}
	rows, err := ParseRows(lines, fields)
	switch {
	case err != nil:
		return nil, &ReplyError{err}
	case len(rows) == 0:
		return nil, &ReplyError{fmt.Errorf("%s printed no %s", cmd.Name(), noun)}
	}
	return rows[0], nil
}

// ShellCommand is the command line, for a POSIX shell, that runs cmd
// against this server (binary and socket flags first), quoted the way
// Python's shlex.join quotes: text a pane's shell runs (run_command's
// trailer), never a line for a login shell over SSH (transport.QuoteArgv
// is the one place for that).
func (s *Server) ShellCommand(c Cmd) string {
	return shellJoin(s.PlainArgv(c))
}

// PlainArgv is cmd's argv as libtmux runs it: binary and socket flags,
// no -u (for error texts that quote the reference's command).
func (s *Server) PlainArgv(c Cmd) []string { return append(s.Prefix(), c.args...) }

// CmdArgv is the full argv a command list runs as (for error texts).
func (s *Server) CmdArgv(cmds ...Cmd) []string { return s.Argv(join(cmds)...) }

// ---- keys and input ----

// SendKeys types keys into target; literal (-l) sends them as text
// rather than key names. The text is never taken for a command separator.
// Keys starting with '-' get no "--": tmux reads them as flags, as in the
// reference server (docs/compatibility.md).
func SendKeys(target string, literal bool, keys string) Cmd {
	args := []string{"send-keys", "-t", target}
	if literal {
		args = append(args, "-l")
	}
	return cmd(append(args, Literal(keys))...)
}

// SendKeysRaw is SendKeys without separator protection for the text
// (send_keys_batch passes its text as libtmux does).
func SendKeysRaw(target string, literal bool, keys string) Cmd {
	args := []string{"send-keys", "-t", target}
	if literal {
		args = append(args, "-l")
	}
	return cmd(append(args, keys)...)
}

// SendEnter presses Enter in target.
func SendEnter(target string) Cmd { return cmd("send-keys", "-t", target, "Enter") }

// ResetTerminal resets target's terminal state (send-keys -R).
func ResetTerminal(target string) Cmd { return cmd("send-keys", "-t", target, "-R") }

// CopyModeCommand runs a copy-mode command in target (send-keys -X),
// repeated n times when n > 0.
func CopyModeCommand(target, command string, n int) Cmd {
	args := []string{"send-keys", "-t", target}
	if n > 0 {
		args = append(args, "-N", strconv.Itoa(n))
	}
	return cmd(append(args, "-X", command)...)
}

// CopyMode puts target into copy mode.
func CopyMode(target string) Cmd { return cmd("copy-mode", "-t", target) }

// ClearHistory drops target's scrollback.
func ClearHistory(target string) Cmd { return cmd("clear-history", "-t", target) }

// ---- buffers ----

// LoadBuffer loads data into the named buffer through the tmux client's
// stdin (a nil data reads an empty stdin).
func LoadBuffer(name string, data []byte) Cmd {
	if data == nil {
		data = []byte{}
	}
	c := cmd("load-buffer", "-b", name, "-")
	c.stdin = data
	return c
}

// PasteBuffer pastes the named buffer into target; del (-d) deletes the
// buffer afterwards, bracket (-p) uses bracketed paste when the
// application asked for it.
func PasteBuffer(target, name string, del, bracket bool) Cmd {
	args := []string{"paste-buffer", "-t", target}
	if del {
		args = append(args, "-d")
	}
	if bracket {
		args = append(args, "-p")
	}
	return cmd(append(args, "-b", name)...)
}

// ShowBuffer prints the named buffer.
func ShowBuffer(name string) Cmd { return cmd("show-buffer", "-b", name) }

// DeleteBuffer deletes the named buffer.
func DeleteBuffer(name string) Cmd { return cmd("delete-buffer", "-b", name) }

// ListBufferNames prints one buffer name per line.
func ListBufferNames() Cmd { return cmd("list-buffers", "-F", "#{buffer_name}") }

// ---- panes ----

// Capture is what capture-pane prints: rows Start..End ("" = tmux's
// default, "-" = the start of history or the end of the screen), with
// wrapped rows joined when Join is set.
type Capture struct {
	Target     string
	Start, End string
	Join       bool
}

// Cmd builds the capture-pane command.
func (c Capture) Cmd() Cmd { return cmd(CaptureArgs(c.Target, c.Start, c.End, c.Join)...) }

// FromRow is c with its start row computed by tmux when the command
// runs: row is a format of this package's callers' own making (numbers
// and #{cursor_y}, #{history_size}, #{e|-:...}), c.Target a plain pane id
// (IsPaneID), so a request can read a pane's state and the rows that
// depend on it at the same instant. run-shell -C expands the line and
// runs it as a tmux command.
func (c Capture) FromRow(row string) Cmd {
	return cmd("run-shell", "-t", c.Target, "-C", strings.Join(CaptureArgs(c.Target, row, c.End, c.Join), " "))
}

// CaptureFromRow is Capture{Target: pane, Join: true}.FromRow(row).
func CaptureFromRow(pane, row string) Cmd { return Capture{Target: pane, Join: true}.FromRow(row) }

// CapturePane prints target's visible rows, with optional -S/-E rows
// (tmux's argument order: -t first).
func CapturePane(target string, start, end *int) Cmd {
	args := []string{"capture-pane", "-t", target, "-p"}
	if start != nil {
		args = append(args, "-S", strconv.Itoa(*start))
	}
	if end != nil {
		args = append(args, "-E", strconv.Itoa(*end))
	}
	return cmd(args...)
}

// DisplayMessage prints format expanded for target ("" for the server's
// current session); an empty format is left out, so tmux prints its
// default message. Check the format with CheckFormat first.
func DisplayMessage(target, format string) Cmd {
	args := []string{"display-message"}
	if target != "" {
		args = append(args, "-t", target)
	}
	args = append(args, "-p")
	if format != "" {
		args = positional(args, format)
	}
	return cmd(args...)
}

// KillPane kills target.
func KillPane(target string) Cmd { return cmd("kill-pane", "-t", target) }

// Spawn is how a new pane or window starts: its directory (-c, taken
// literally) and environment (-e NAME=VALUE, in order).
type Spawn struct {
	Dir string   // "" leaves tmux's default
	Env []string // NAME=VALUE
}

// RespawnPane restarts target's process; kill (-k) kills a running one
// first; shell is the command to run ("" for the default).
func RespawnPane(target string, kill bool, dir *string, env []string, shell string) Cmd {
	args := []string{"respawn-pane", "-t", target}
	if kill {
		args = append(args, "-k")
	}
	if dir != nil {
		args = append(args, "-c"+EscapeLiteral(*dir))
	}
	args = append(args, envArgs(env)...)
	if shell != "" {
		args = positional(args, shell)
	}
	return cmd(args...)
}

func envArgs(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		out[i] = "-e" + kv
	}
	return out
}

// SelectPane makes target the active pane.
func SelectPane(target string) Cmd { return cmd("select-pane", "-t", target) }

// Direction is a select-pane direction relative to the active pane.
type Direction string

// The directions select-pane moves in.
const (
	Up    Direction = "up"
	Down  Direction = "down"
	Left  Direction = "left"
	Right Direction = "right"
	Last  Direction = "last"
)

var directionFlags = map[Direction]string{Up: "-U", Down: "-D", Left: "-L", Right: "-R", Last: "-l"}

// SelectPaneDirection moves to the pane in direction d of window target;
// ok is false for a direction select-pane has no flag for.
func SelectPaneDirection(target string, d Direction) (Cmd, bool) {
	f, ok := directionFlags[d]
	if !ok {
		return Cmd{}, false
	}
	return cmd("select-pane", "-t", target, f), true
}

// SetPaneTitle sets target's title, taken literally.
func SetPaneTitle(target, title string) Cmd {
	return cmd("select-pane", "-t", target, "-T", EscapeLiteral(title))
}

// PipePane pipes target's output to a shell command (PipeCommand builds
// a safe one); an empty command stops piping.
func PipePane(target, command string) Cmd {
	if command == "" {
		return cmd("pipe-pane", "-t", target)
	}
	return cmd("pipe-pane", "-t", target, command)
}

// ResizePane sets target's height (-y) and width (-x) where non-nil.
func ResizePane(target string, height, width *int) Cmd {
	args := []string{"resize-pane", "-t", target}
	if height != nil {
		args = append(args, "-y"+strconv.Itoa(*height))
	}
	if width != nil {
		args = append(args, "-x"+strconv.Itoa(*width))
	}
	return cmd(args...)
}

// ToggleZoom zooms or unzooms target (resize-pane -Z).
func ToggleZoom(target string) Cmd { return cmd("resize-pane", "-t", target, "-Z") }

// SetZoom zooms (or unzooms) the pane with id paneID unless its window
// already is (or is not): the check and the toggle in one command.
func SetZoom(paneID string, zoomed bool) Cmd {
	want := "0"
	if zoomed {
		want = "1"
	}
	return IfThen(paneID, "#{!=:#{window_zoomed_flag},"+want+"}", ToggleZoom(paneID))
}

// SwapPane swaps target and source.
func SwapPane(target, source string) Cmd { return cmd("swap-pane", "-t", target, "-s", source) }

// Split is a split-window request.
type Split struct {
	Target string
	// Vertical splits top/bottom (-v), otherwise left/right (-h);
	// Before puts the new pane above or left (-b).
	Vertical, Before bool
	// Size is the new pane's size: cells or a percentage ("50%").
	Size  string
	Spawn Spawn
	Shell string // command to run; "" for the default shell
}

// SplitWindow splits a pane and prints the new pane's id; the new pane
// does not take focus (-d).
func SplitWindow(s Split) Cmd {
	args := []string{"split-window", "-t", s.Target}
	if s.Vertical {
		args = append(args, "-v")
	} else {
		args = append(args, "-h")
	}
	if s.Before {
		args = append(args, "-b")
	}
	if s.Size != "" {
		// tmux 3.4 and later expand -l as a format (#(cmd) would run);
		// no valid size has a '#', so escaped it stays invalid, as on 3.3.
		args = append(args, "-l"+EscapeLiteral(s.Size))
	}
	args = append(args, "-P", "-F", "#{pane_id}")
	if s.Spawn.Dir != "" {
		args = append(args, "-c"+EscapeLiteral(s.Spawn.Dir))
	}
	args = append(args, "-d")
	args = append(args, envArgs(s.Spawn.Env)...)
	if s.Shell != "" {
		args = positional(args, s.Shell)
	}
	return cmd(args...)
}

// ---- windows ----

// NewWindow is a new-window request.
type NewWindow struct {
	Session string // session id
	Name    *string
	Attach  bool
	// After/Before place the window next to the current one (-a/-b).
	After, Before bool
	Spawn         Spawn
}

// Cmd builds new-window printing the new window's fields.
func (w NewWindow) Cmd() Cmd {
	args := []string{"new-window", "-t", w.Session + ":"}
	if !w.Attach {
		args = append(args, "-d")
	}
	args = append(args, "-P", "-F", Format(WindowFields))
	if w.Spawn.Dir != "" {
		args = append(args, "-c", EscapeLiteral(w.Spawn.Dir))
	}
	if w.Name != nil {
		args = append(args, "-n", EscapeLiteral(*w.Name))
	}
	args = append(args, envArgs(w.Spawn.Env)...)
	switch {
	case w.Before:
		args = append(args, "-b")
	case w.After:
		args = append(args, "-a")
	}
	return cmd(args...)
}

// RenameWindow renames target; the name is taken literally.
func RenameWindow(target, name string) Cmd {
	return cmd(positional([]string{"rename-window", "-t", target}, EscapeLiteral(name))...)
}

// SelectWindow makes target the current window of its session.
func SelectWindow(target string) Cmd { return cmd("select-window", "-t", target) }

// WindowStep selects the next, previous or last window of session.
func WindowStep(session, step string) (Cmd, bool) {
	switch step {
	case "next":
		return cmd("next-window", "-t", session), true
	case "previous":
		return cmd("previous-window", "-t", session), true
	case "last":
		return cmd("last-window", "-t", session), true
	}
	return Cmd{}, false
}

// SelectLayout applies layout to target; "" re-applies the last one.
// Check the layout with CheckLayout first.
func SelectLayout(target, layout string) Cmd {
	if layout == "" {
		return cmd("select-layout", "-t", target)
	}
	return cmd("select-layout", "-t", target, layout)
}

// ResizeWindow sets target's height and width where non-zero.
func ResizeWindow(target string, height, width int) Cmd {
	args := []string{"resize-window", "-t", target}
	if height != 0 {
		args = append(args, "-y"+strconv.Itoa(height))
	}
	if width != 0 {
		args = append(args, "-x"+strconv.Itoa(width))
	}
	return cmd(args...)
}

// MoveWindow moves window source ("session:index") to "dest:index".
func MoveWindow(source, dest, index string) Cmd {
	return cmd("move-window", "-s", source, "-t", dest+":"+index)
}

// KillWindow kills target.
func KillWindow(target string) Cmd { return cmd("kill-window", "-t", target) }

// ---- sessions and server ----

// NewSession is a new-session request (always detached).
type NewSession struct {
	Name, WindowName *string
	Width, Height    *int
	Spawn            Spawn
}

// Cmd builds new-session printing the new session's fields.
func (n NewSession) Cmd() Cmd {
	args := []string{"new-session", "-d", "-P", "-F", Format(SessionFields)}
	if n.Name != nil {
		args = append(args, "-s", EscapeLiteral(*n.Name))
	}
	if n.Spawn.Dir != "" {
		args = append(args, "-c", EscapeLiteral(n.Spawn.Dir))
	}
	if n.WindowName != nil {
		args = append(args, "-n", EscapeLiteral(*n.WindowName))
	}
	if n.Width != nil {
		args = append(args, "-x", strconv.Itoa(*n.Width))
	}
	if n.Height != nil {
		args = append(args, "-y", strconv.Itoa(*n.Height))
	}
	c := cmd(append(args, envArgs(n.Spawn.Env)...)...)
	c.unnested = true
	return c
}

// RenameSession renames target; the name is taken literally.
func RenameSession(target, name string) Cmd {
	return cmd(positional([]string{"rename-session", "-t", target}, EscapeLiteral(name))...)
}

// KillSession kills target.
func KillSession(target string) Cmd { return cmd("kill-session", "-t", target) }

// KillServer stops the server.
func KillServer() Cmd { return cmd("kill-server") }

// ListSessionsPlain is list-sessions with tmux's default output (a
// liveness probe that never starts a server).
func ListSessionsPlain() Cmd { return cmd("list-sessions") }

// ListIDs prints one id per line: sessions ("list-sessions"), windows or
// panes of target (or of the whole server when target is "").
func ListIDs(kind, target string) Cmd {
	var args []string
	switch kind {
	case "session":
		args = []string{"list-sessions"}
	case "window":
		args = []string{"list-windows"}
	default:
		args = []string{"list-panes"}
	}
	if kind != "session" {
		if target == "" {
			args = append(args, "-a")
		} else {
			args = append(args, "-t", target)
		}
	}
	return cmd(append(args, "-F", "#{"+kind+"_id}")...)
}

// ListSessionsFormat prints format for every session.
func ListSessionsFormat(format string) Cmd { return cmd("list-sessions", "-F", format) }

// plainSearchChars is what a pattern may consist of for tmux to test
// pane contents with #{C:...}. tmux expands the pattern as a format, so
// only characters that mean themselves there, and in a regular
// expression, are allowed.
var plainSearchChars = regexp.MustCompile(`^[A-Za-z0-9 _\-/:=@]*$`)

// ContainsFilter is tmux's test of whether a pane's visible contents
// match pattern (#{C:...}, case-insensitive unless matchCase), for
// list-panes -f or a format condition; ok is false for a pattern tmux
// cannot test safely: match those in the caller instead.
func ContainsFilter(pattern string, regex, matchCase bool) (string, bool) {
	plain := pattern
	if !regex {
		plain = strings.ReplaceAll(plain, ".", "") // a dot is plain text outside regular expressions
	}
	if !plainSearchChars.MatchString(plain) {
		return "", false
	}
	if matchCase {
		return "#{C:" + pattern + "}", true
	}
	return "#{C/i:" + pattern + "}", true
}

// ---- channels ----

// WaitFor blocks until channel is signalled.
func WaitFor(channel string) Cmd { return cmd(positional([]string{"wait-for"}, channel)...) }

// Signal signals channel (wait-for -S).
func Signal(channel string) Cmd { return cmd(positional([]string{"wait-for", "-S"}, channel)...) }

// Pause holds the rest of a command list for d (run-shell -d with no
// command, tmux 3.2 and later; millisecond resolution).
func Pause(d time.Duration) Cmd {
	return cmd("run-shell", "-d", strconv.FormatFloat(d.Seconds(), 'f', 3, 64))
}

// ---- options, environment, hooks ----

// Scope is the object an option or hook belongs to.
type Scope string

// The option scopes; the session scope has no flag of its own.
const (
	ScopeServer  Scope = "server"
	ScopeSession Scope = "session"
	ScopeWindow  Scope = "window"
	ScopePane    Scope = "pane"
)

var (
	optionScopeFlags = map[Scope]string{ScopeServer: "-s", ScopeSession: "", ScopeWindow: "-w", ScopePane: "-p"}
	hookScopeFlags   = map[Scope]string{ScopeServer: "-g", ScopeSession: "", ScopeWindow: "-w", ScopePane: "-p"}
)

// ValidScope reports whether s names a scope.
func ValidScope(s string) bool {
	_, ok := optionScopeFlags[Scope(s)]
	return ok
}

// OptionTarget is where an option or hook command looks: an object id
// (-t, "" for none), the global table (-g) and a scope ("" for none).
type OptionTarget struct {
	ID     string
	Global bool
	Scope  Scope
}

func (t OptionTarget) optionArgs(sub string) []string {
	args := []string{sub}
	if t.ID != "" {
		args = append(args, "-t", t.ID)
	}
	if t.Global {
		args = append(args, "-g")
	}
	if f := optionScopeFlags[t.Scope]; f != "" {
		args = append(args, f)
	}
	return args
}

// ShowOptions prints option (or all options when "") at t.
func ShowOptions(t OptionTarget, option string) Cmd {
	return cmd(positional(t.optionArgs("show-options"), option)...)
}

// SetOption sets option to value at t.
func SetOption(t OptionTarget, option, value string) Cmd {
	return cmd(positional(t.optionArgs("set-option"), option, value)...)
}

// ShowPaneOption prints the value of a pane option of target (-v).
func ShowPaneOption(target, option string) Cmd {
	return cmd("show-option", "-p", "-v", "-t", target, option)
}

// SetPaneOption sets a pane option of target; with no value the command
// expects it as its last argument (run_command's trailer adds it).
func SetPaneOption(target, option string) Cmd {
	return cmd("set-option", "-p", "-t", target, option)
}

// SetPaneOptionFormat sets a pane option of target to format expanded
// for target when the command runs (set-option -F).
func SetPaneOptionFormat(target, option, format string) Cmd {
	return cmd("set-option", "-p", "-F", "-t", target, option, format)
}

// UnsetPaneOption unsets a pane option of target.
func UnsetPaneOption(target, option string) Cmd {
	return cmd("set-option", "-p", "-u", "-t", target, option)
}

// SetServerOption sets a server user option; with no value the command
// expects it as its last argument (a job's wrapper adds it).
func SetServerOption(option string) Cmd { return cmd("set-option", "-s", option) }

// ShowServerOption prints the value of a server option (-v), nothing when
// it is not set (-q).
func ShowServerOption(option string) Cmd { return cmd("show-options", "-s", "-v", "-q", option) }

// UnsetServerOption unsets a server option (quietly when it is not set).
func UnsetServerOption(option string) Cmd { return cmd("set-option", "-s", "-u", "-q", option) }

// ShowHooks prints hooks at t: with an id the object's own -t decides the
// scope; with only a scope its flag is passed, and for the session scope
// that flag is an empty argument (as libtmux builds it).
func ShowHooks(t OptionTarget) Cmd {
	args := []string{"show-hooks"}
	if t.ID != "" {
		args = append(args, "-t", t.ID)
	}
	if t.Global {
		args = append(args, "-g")
	}
	if t.ID == "" && t.Scope != "" {
		args = append(args, hookScopeFlags[t.Scope])
	}
	return cmd(args...)
}

// ShowHook prints one hook at t.
func ShowHook(t OptionTarget, name string) Cmd {
	args := ShowHooks(t).args
	if slices.Contains(args, "") { // the session scope's empty flag already ends the flags
		return cmd(append(args, name)...)
	}
	return cmd(positional(args, name)...)
}

// ShowGlobalWindowHooks prints the global window hooks (show-hooks -g -w).
func ShowGlobalWindowHooks() Cmd { return cmd("show-hooks", "-g", "-w") }

// ShowEnvironment prints the environment of session (global when "").
func ShowEnvironment(session string) Cmd {
	if session == "" {
		return cmd("show-environment", "-g")
	}
	return cmd("show-environment", "-t", session)
}

// SetEnvironment sets name=value in session's environment (global when
// session is "").
func SetEnvironment(session, name, value string) Cmd {
	if session == "" {
		return cmd(positional([]string{"set-environment", "-g"}, name, value)...)
	}
	return cmd(positional([]string{"set-environment", "-t", session}, name, value)...)
}
