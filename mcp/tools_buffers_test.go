package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/mcp/tools"
)

func TestBufferRoundTrip(t *testing.T) {
	e := newEnv(t)
	payload := "hello from fleetmux\nsecond line\n"
	var ref tools.BufferRef
	e.ok("load_buffer", map[string]any{"content": payload, "logical_name": "notes"}, &ref)
	if !tools.BufferNameRE.MatchString(ref.BufferName) || !strings.HasSuffix(ref.BufferName, "_notes") || ref.LogicalName == nil || *ref.LogicalName != "notes" {
		t.Fatalf("ref = %+v", ref)
	}
	var seen tools.BufferContent
	e.ok("show_buffer", map[string]any{"buffer_name": ref.BufferName}, &seen)
	if seen != (tools.BufferContent{BufferName: ref.BufferName, Content: payload}) {
		t.Fatalf("show_buffer = %+v", seen)
	}
	if got := e.ok("delete_buffer", map[string]any{"buffer_name": ref.BufferName}, nil); got != "Buffer '"+ref.BufferName+"' deleted" {
		t.Fatalf("delete = %q", got)
	}
	e.fail("show_buffer", map[string]any{"buffer_name": ref.BufferName}, "show-buffer failed for '"+ref.BufferName+"': no buffer "+ref.BufferName)
	e.fail("delete_buffer", map[string]any{"buffer_name": ref.BufferName}, "delete-buffer failed for '"+ref.BufferName+"'")

	// null and "" logical names become "buf" and are echoed as given.
	res := e.call("load_buffer", map[string]any{"content": "x"})
	if res.IsError || !strings.Contains(text(res), `_buf","logical_name":null`) {
		t.Fatalf("null logical name: %s", text(res))
	}
	e.ok("load_buffer", map[string]any{"content": "x", "logical_name": ""}, &ref)
	if !strings.HasSuffix(ref.BufferName, "_buf") || ref.LogicalName == nil || *ref.LogicalName != "" {
		t.Fatalf("empty logical name: %+v", ref)
	}
}

func TestBufferNames(t *testing.T) {
	e := newEnv(t)
	var a, b tools.BufferRef
	e.ok("load_buffer", map[string]any{"content": "one", "logical_name": "clipboard"}, &a)
	e.ok("load_buffer", map[string]any{"content": "two", "logical_name": "clipboard"}, &b)
	if a.BufferName == b.BufferName || !strings.HasPrefix(a.BufferName, "libtmux_mcp_") || !strings.HasSuffix(a.BufferName, "_clipboard") || !strings.HasSuffix(b.BufferName, "_clipboard") {
		t.Fatalf("names %q %q", a.BufferName, b.BufferName)
	}
	// A version-4 UUID: version nibble 4, variant 8-b.
	hex32 := strings.TrimSuffix(strings.TrimPrefix(a.BufferName, "libtmux_mcp_"), "_clipboard")
	if len(hex32) != 32 || hex32[12] != '4' || !strings.ContainsRune("89ab", rune(hex32[16])) {
		t.Fatalf("uuid part %q", hex32)
	}

	for _, ok := range []string{"my-buffer", "clipboard.v2", "a", strings.Repeat("x", 64)} {
		e.ok("load_buffer", map[string]any{"content": "v", "logical_name": ok}, nil)
	}
	for _, bad := range []string{"has space", "with/slash", strings.Repeat("x", 65), "semi;colon"} {
		e.fail("load_buffer", map[string]any{"content": "v", "logical_name": bad}, "Invalid logical buffer name: "+pyfmt.Repr(bad))
	}
	for _, tool := range []string{"paste_buffer", "show_buffer", "delete_buffer"} {
		e.fail(tool, map[string]any{"buffer_name": "clipboard"}, "Invalid buffer name: 'clipboard'")
		e.fail(tool, map[string]any{"buffer_name": "libtmux_mcp_shortuuid_buf"}, "Invalid buffer name")
	}
	// A well-formed name passes validation and reaches tmux.
	e.fail("show_buffer", map[string]any{"buffer_name": "libtmux_mcp_00112233445566778899aabbccddeeff_buf"}, "show-buffer failed")
}

func TestBufferPaste(t *testing.T) {
	e := newEnv(t)
	pane := e.firstPane()
	e.tmux("respawn-pane", "-k", "-t", pane, "cat")
	var ref tools.BufferRef
	e.ok("load_buffer", map[string]any{"content": "pasted-marker-42"}, &ref)
	got := e.ok("paste_buffer", map[string]any{"buffer_name": ref.BufferName, "pane_id": pane, "bracket": false}, nil)
	if got != "Buffer '"+ref.BufferName+"' pasted to pane "+pane {
		t.Fatalf("paste_buffer = %q", got)
	}
	waitFor(t, "the pasted text", func() bool {
		return strings.Contains(e.tmux("capture-pane", "-p", "-t", pane), "pasted-marker-42")
	})
	// The buffer stays (no -d); a missing pane is a lookup error.
	if !strings.Contains(e.tmux("list-buffers", "-F", "#{buffer_name}"), ref.BufferName) {
		t.Fatal("paste_buffer deleted the buffer")
	}
	e.fail("paste_buffer", map[string]any{"buffer_name": ref.BufferName, "pane_id": "%999"}, "Pane not found: Pane not found: %999")
}

func TestBufferShowMaxLines(t *testing.T) {
	e := newEnv(t)
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("line-%d", i))
	}
	payload := strings.Join(lines, "\n") + "\n"
	var ref tools.BufferRef
	e.ok("load_buffer", map[string]any{"content": payload}, &ref)

	var seen tools.BufferContent
	e.ok("show_buffer", map[string]any{"buffer_name": ref.BufferName, "max_lines": 5}, &seen)
	if !seen.ContentTruncated || seen.ContentTruncatedLines != 15 || seen.Content != strings.Join(lines[15:], "\n") {
		t.Fatalf("max_lines=5: %+v", seen)
	}
	e.ok("show_buffer", map[string]any{"buffer_name": ref.BufferName, "max_lines": nil}, &seen)
	if seen.ContentTruncated || seen.ContentTruncatedLines != 0 || seen.Content != payload {
		t.Fatalf("max_lines=None: %+v", seen)
	}
	e.ok("show_buffer", map[string]any{"buffer_name": ref.BufferName}, &seen)
	if seen.ContentTruncated || seen.Content != payload {
		t.Fatalf("default cap: %+v", seen)
	}
	// Slice semantics: 0 keeps everything but reports truncation.
	e.ok("show_buffer", map[string]any{"buffer_name": ref.BufferName, "max_lines": 0}, &seen)
	if !seen.ContentTruncated || seen.ContentTruncatedLines != 20 || seen.Content != strings.Join(lines, "\n") {
		t.Fatalf("max_lines=0: %+v", seen)
	}
}

func TestBufferTimeouts(t *testing.T) {
	e := newEnv(t)
	bin := filepath.Join(t.TempDir(), "slow-tmux")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := tools.BufferTimeout
	tools.BufferTimeout = 200 * time.Millisecond
	t.Cleanup(func() { tools.BufferTimeout = old })
	e.setVar("LIBTMUX_TMUX_BIN", bin)
	name := "libtmux_mcp_00112233445566778899aabbccddeeff_buf"
	e.fail("load_buffer", map[string]any{"content": "x"}, "load-buffer timeout after 5s for 'libtmux_mcp_")
	e.fail("show_buffer", map[string]any{"buffer_name": name}, "show-buffer timeout after 5s for '"+name+"'")
	e.fail("delete_buffer", map[string]any{"buffer_name": name}, "delete-buffer timeout after 5s for '"+name+"'")
}

func TestBufferSweep(t *testing.T) {
	e := newEnv(t)
	var ref tools.BufferRef
	e.ok("load_buffer", map[string]any{"content": "swept"}, &ref)
	e.tmux("set-buffer", "-b", "user_clip", "keep me")
	e.srv.sweepBuffers(t.Context())
	names := e.tmux("list-buffers", "-F", "#{buffer_name}")
	if strings.Contains(names, "libtmux_mcp_") || !strings.Contains(names, "user_clip") {
		t.Fatalf("after sweep: %q", names)
	}
	// The registry was emptied; a second sweep is a no-op.
	e.srv.sweepBuffers(t.Context())
	if n := e.srv.env.NotedServers(); n != 0 {
		t.Errorf("registry still holds %d tmux servers of this server", n)
	}
}
