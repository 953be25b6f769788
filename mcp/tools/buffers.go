package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

// Agent-owned paste buffers and the shutdown
// sweep that removes the ones left behind.

const mcpBufferPrefix = "libtmux_mcp_"

var (
	// BufferNameRE is constants.BUFFER_NAME_RE: only names this server
	// allocates are reachable, never user or clipboard buffers.
	BufferNameRE = regexp.MustCompile(`^libtmux_mcp_[0-9a-f]{32}_[A-Za-z0-9_.-]{1,64}$`)
	// logicalNameRE is constants.LOGICAL_BUFFER_NAME_RE.
	logicalNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

// BufferTimeout bounds every buffer subprocess
// (constants.BUFFER_SUBPROCESS_TIMEOUT_SECONDS); a variable for tests.
var BufferTimeout = 5 * time.Second

// newBufferName allocates libtmux_mcp_<uuid4 hex>_<logical or "buf">.
func newBufferName(logical *string) (string, error) {
	base := "buf"
	if logical != nil && *logical != "" {
		if !logicalNameRE.MatchString(*logical) {
			return "", Expectedf("Invalid logical buffer name: %s", pyfmt.Repr(*logical))
		}
		base = *logical
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", Unexpected("RuntimeError", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return mcpBufferPrefix + hex.EncodeToString(b[:]) + "_" + base, nil
}

// checkBufferName refuses names outside the agent namespace.
// checkBufferArg refuses a buffer_name fleetmux did not hand out.
func checkBufferArg(a bufferNameArg) error { return checkBufferName(a.BufferName) }

// bufferNameArg is the buffer_name argument of the tools on one buffer.
type bufferNameArg struct {
	BufferName string // checked by checkBufferArg
}

func checkBufferName(name string) error {
	if !BufferNameRE.MatchString(name) {
		return Expectedf("Invalid buffer name: %s", pyfmt.Repr(name))
	}
	return nil
}

// namedBufferCmd is boundedCmd for a command on buffer name (checked by
// checkBufferArg), whose messages name it: "show-buffer failed for
// 'NAME': ...".
func namedBufferCmd(ctx context.Context, c *Call, name string, build func(name string) tmux.Cmd) (*tmux.Output, error) {
	cmd := build(name)
	out, err := boundedCmd(ctx, c.srv, BufferTimeout,
		cmd.Name()+" timeout after 5s for "+pyfmt.Repr(name),
		func(d string) string { return cmd.Name() + " failed for " + pyfmt.Repr(name) + ": " + d },
		cmd)
	return out, err
}

type loadBufferArgs struct {
	Content     string
	LogicalName *string
}

func loadBuffer(ctx context.Context, c *Call, a loadBufferArgs) (any, error) {
	c.env.noteServer(c.srv)
	name, err := newBufferName(a.LogicalName)
	if err != nil {
		return nil, err
	}
	// The content goes through the tmux client's stdin rather than a
	// temporary file, so it works the same on a remote host.
	_, err = boundedCmd(ctx, c.srv, BufferTimeout,
		"load-buffer timeout after 5s for "+pyfmt.Repr(name),
		func(d string) string { return "load-buffer failed: " + d },
		tmux.LoadBuffer(name, []byte(a.Content)))
	if err != nil {
		return nil, err
	}
	return BufferRef{BufferName: name, LogicalName: a.LogicalName}, nil
}

type pasteBufferArgs struct {
	bufferNameArg
	Bracket bool
}

func pasteBuffer(ctx context.Context, c *Call, a pasteBufferArgs) (any, error) {
	srv := c.srv
	name := a.BufferName
	p, err := c.resolvePane(ctx, srv)
	if err != nil {
		return nil, err
	}
	id := p["pane_id"]
	if _, err := srv.Do(ctx, tmux.PasteBuffer(id, name, false, a.Bracket)); err != nil {
		return nil, err
	}
	return "Buffer " + pyfmt.Repr(name) + " pasted to pane " + id, nil
}

type showBufferArgs struct {
	bufferNameArg
	MaxLines *int
}

func showBuffer(ctx context.Context, c *Call, a showBufferArgs) (any, error) {
	name := a.BufferName
	out, err := namedBufferCmd(ctx, c, name, tmux.ShowBuffer)
	if err != nil {
		return nil, err
	}
	raw := pyfmt.DecodeReplace(out.Stdout)
	kept, truncated, dropped := tailLines(pySplitLines(raw), a.MaxLines)
	content := raw
	if truncated {
		content = strings.Join(kept, "\n")
	}
	return BufferContent{BufferName: name, Content: content, ContentTruncated: truncated, ContentTruncatedLines: dropped}, nil
}

type deleteBufferArgs struct {
	bufferNameArg
}

func deleteBuffer(ctx context.Context, c *Call, a deleteBufferArgs) (any, error) {
	name := a.BufferName
	_, err := namedBufferCmd(ctx, c, name, tmux.DeleteBuffer)
	if err != nil {
		return nil, err
	}
	return "Buffer " + pyfmt.Repr(name) + " deleted", nil
}

// pySplitLines is Python's str.splitlines(): universal line boundaries,
// terminators dropped, no empty last line for a final terminator.
func pySplitLines(s string) []string {
	lines := []string{}
	start := 0
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			lines = append(lines, string(rs[start:i]))
			start = i + 1
		case '\r':
			lines = append(lines, string(rs[start:i]))
			if i+1 < len(rs) && rs[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(rs) {
		lines = append(lines, string(rs[start:]))
	}
	return lines
}

// The shutdown sweep visits every tmux server load_buffer has used.
// Entries are scoped to the owning Server so two servers in one process
// (tests) never sweep each other's sockets.

type bufferServerKey struct {
	owner           *Env
	name, path, bin string
}

var (
	bufferServersMu sync.Mutex
	bufferServers   = map[bufferServerKey][]tmux.Executor{}
)

// noteServer records srv for the shutdown buffer sweep.
func (s *Env) noteServer(srv *tmux.Server) {
	if srv == nil || srv.Executor == nil {
		return
	}
	k := bufferServerKey{owner: s, name: srv.SocketName, path: srv.SocketPath, bin: srv.Bin}
	bufferServersMu.Lock()
	defer bufferServersMu.Unlock()
	for _, r := range bufferServers[k] {
		if sameExecutor(r, srv.Executor) {
			return
		}
	}
	bufferServers[k] = append(bufferServers[k], srv.Executor)
}

// NotedServers is how many tmux servers the buffer sweep would visit.
func (s *Env) NotedServers() int {
	bufferServersMu.Lock()
	defer bufferServersMu.Unlock()
	n := 0
	for k, rs := range bufferServers {
		if k.owner == s {
			n += len(rs)
		}
	}
	return n
}

// sameExecutor compares executors without panicking on uncomparable
// types.
func sameExecutor(a, b tmux.Executor) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || !ta.Comparable() {
		return false
	}
	return a == b
}

// SweepBuffers deletes every libtmux_mcp_* buffer on the servers this
// Server's load_buffer calls touched, then forgets them. Failures are
// logged at debug level and otherwise ignored.
func (s *Env) SweepBuffers(ctx context.Context) {
	type entry struct {
		k bufferServerKey
		r tmux.Executor
	}
	var todo []entry
	bufferServersMu.Lock()
	for k, rs := range bufferServers {
		if k.owner != s {
			continue
		}
		for _, r := range rs {
			todo = append(todo, entry{k, r})
		}
		delete(bufferServers, k)
	}
	bufferServersMu.Unlock()
	for _, e := range todo {
		srv := &tmux.Server{Executor: e.r, Bin: e.k.bin, SocketName: e.k.name, SocketPath: e.k.path}
		s.sweepServer(ctx, srv)
	}
}

func (s *Env) sweepServer(ctx context.Context, srv *tmux.Server) {
	lctx, cancel := context.WithTimeout(ctx, BufferTimeout)
	out, err := srv.Exec(lctx, tmux.ListBufferNames())
	cancel()
	if err != nil || out.ExitCode != 0 {
		s.Log.Debug("buffer sweep: list-buffers failed", "socket", srv.SocketName, "path", srv.SocketPath, "error", err)
		return
	}
	for _, name := range out.Lines() {
		if !strings.HasPrefix(name, mcpBufferPrefix) {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, BufferTimeout)
		if _, err := srv.Exec(dctx, tmux.DeleteBuffer(name)); err != nil {
			s.Log.Debug("buffer sweep: delete-buffer failed", "buffer", name, "error", err)
		}
		cancel()
	}
}
