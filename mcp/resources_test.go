package mcp

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

func (e *testEnv) readResource(uri string) (*sdk.ReadResourceResult, error) {
	return e.cs.ReadResource(e.t.Context(), &sdk.ReadResourceParams{URI: uri})
}

// readText reads a resource and returns its single text body.
func (e *testEnv) readText(uri string) string {
	e.t.Helper()
	res, err := e.readResource(uri)
	if err != nil {
		e.t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		e.t.Fatalf("read %s: %d contents", uri, len(res.Contents))
	}
	c := res.Contents[0]
	if c.MIMEType != "text/plain" || c.URI != uri {
		e.t.Fatalf("read %s: mime %q uri %q", uri, c.MIMEType, c.URI)
	}
	return c.Text
}

func TestResourceTemplatesList(t *testing.T) {
	e := newEnv(t)
	res, err := e.cs.ListResourceTemplates(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, tmpl, mime string }{
		{"get_sessions", "tmux://sessions{?socket_name}", "application/json"},
		{"get_session", "tmux://sessions/{session_name}{?socket_name}", "application/json"},
		{"get_session_windows", "tmux://sessions/{session_name}/windows{?socket_name}", "application/json"},
		{"get_window", "tmux://sessions/{session_name}/windows/{window_index}{?socket_name}", "application/json"},
		{"get_pane", "tmux://panes/{pane_id}{?socket_name}", "application/json"},
		{"get_pane_content", "tmux://panes/{pane_id}/content{?socket_name}", "text/plain"},
	}
	if len(res.ResourceTemplates) != len(want) {
		t.Fatalf("%d templates", len(res.ResourceTemplates))
	}
	for i, w := range want {
		got := res.ResourceTemplates[i]
		if got.Name != w.name || got.URITemplate != w.tmpl || got.MIMEType != w.mime || got.Title == "" || got.Description == "" {
			t.Errorf("template %d = %+v, want %+v", i, got, w)
		}
		b, _ := json.Marshal(got.Meta)
		if string(b) != `{"fastmcp":{"tags":[]}}` {
			t.Errorf("%s meta %s", w.name, b)
		}
	}
	lr, err := e.cs.ListResources(t.Context(), nil)
	if err != nil || len(lr.Resources) != 0 {
		t.Fatalf("resources/list: %v %v", lr, err)
	}
}

func TestResourceRead(t *testing.T) {
	e := newEnv(t)
	pane := e.firstPane()
	enc := url.PathEscape(pane) // %3 -> %253

	body := e.readText("tmux://sessions")
	if !strings.HasPrefix(body, "[\n  {\n    \"session_id\": \"$") || !strings.Contains(body, "\"session_name\": \"fixture\",\n") {
		t.Fatalf("sessions body:\n%s", body)
	}
	var sessions []map[string]any
	if err := json.Unmarshal([]byte(body), &sessions); err != nil || len(sessions) != 1 {
		t.Fatalf("sessions: %v %v", sessions, err)
	}
	if _, ok := sessions[0]["host"]; ok {
		t.Fatal("host field in a resource body")
	}
	// socket_name in the query selects the server; a missing server has
	// no sessions.
	if got := e.readText("tmux://sessions?socket_name=" + e.socket); got != body {
		t.Fatalf("explicit socket differs:\n%s", got)
	}
	if got := e.readText("tmux://sessions?socket_name=fleetmux-test-nonexistent-x"); got != "[]" {
		t.Fatalf("dead server: %q", got)
	}

	var sess map[string]any
	body = e.readText("tmux://sessions/fixture")
	if err := json.Unmarshal([]byte(body), &sess); err != nil {
		t.Fatal(err)
	}
	wins, _ := sess["windows"].([]any)
	if sess["session_name"] != "fixture" || len(wins) != 1 || !strings.HasSuffix(body, "\n    }\n  ]\n}") {
		t.Fatalf("session detail:\n%s", body)
	}
	keys := resourceKeys(t, body)
	if strings.Join(keys, ",") != "session_id,session_name,window_count,session_attached,session_created,active_pane_id,windows" {
		t.Fatalf("session keys %v", keys)
	}

	var windows []map[string]any
	if err := json.Unmarshal([]byte(e.readText("tmux://sessions/fixture/windows")), &windows); err != nil || len(windows) != 1 {
		t.Fatalf("windows: %v %v", windows, err)
	}
	idx, _ := windows[0]["window_index"].(string)
	var win map[string]any
	if err := json.Unmarshal([]byte(e.readText("tmux://sessions/fixture/windows/"+idx)), &win); err != nil {
		t.Fatal(err)
	}
	panes, _ := win["panes"].([]any)
	if win["window_index"] != idx || len(panes) != 1 || panes[0].(map[string]any)["pane_id"] != pane {
		t.Fatalf("window detail: %v", win)
	}

	var p map[string]any
	if err := json.Unmarshal([]byte(e.readText("tmux://panes/"+enc)), &p); err != nil || p["pane_id"] != pane {
		t.Fatalf("pane detail: %v %v", p, err)
	}
	if _, ok := p["is_caller"]; !ok {
		t.Fatal("pane detail lacks is_caller")
	}

	e.tmux("respawn-pane", "-k", "-t", pane, "printf 'RESOURCE_MARK\\n'; exec sleep 600")
	waitFor(t, "marker", func() bool {
		return strings.Contains(e.tmux("capture-pane", "-p", "-t", pane), "RESOURCE_MARK")
	})
	content := e.readText("tmux://panes/" + enc + "/content")
	if !strings.Contains(content, "RESOURCE_MARK") || strings.HasSuffix(content, "\n") {
		t.Fatalf("pane content %q", content)
	}
}

func resourceKeys(t *testing.T, body string) []string {
	t.Helper()
	v, err := pyfmt.DecodeOrdered([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return v.(*pyfmt.OMap).Keys()
}

func TestResourceErrors(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		uri  string
		code int64
		msg  string
	}{
		{"tmux://sessions/nope", jsonrpc.CodeInternalError, "Internal error: Session not found: nope"},
		{"tmux://sessions/nope/windows", jsonrpc.CodeInternalError, "Internal error: Session not found: nope"},
		{"tmux://sessions/fixture/windows/9", jsonrpc.CodeInternalError, "Internal error: Window not found: index 9"},
		{"tmux://sessions/nope/windows/0", jsonrpc.CodeInternalError, "Internal error: Session not found: nope"},
		{"tmux://panes/%25999", jsonrpc.CodeInternalError, "Internal error: Pane not found: %999"},
		{"tmux://panes/%25999/content", jsonrpc.CodeInternalError, "Internal error: Pane not found: %999"},
		// Lenient decoding: an invalid escape stays literal.
		{"tmux://panes/%1", jsonrpc.CodeInternalError, "Internal error: Pane not found: %1"},
		{"tmux://bogus", -32002, "Resource not found: Unknown resource: 'tmux://bogus'"},
		{"tmux://sessions/a/b/c/d", -32002, "Resource not found: Unknown resource: 'tmux://sessions/a/b/c/d'"},
	}
	for _, tc := range cases {
		_, err := e.readResource(tc.uri)
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			t.Errorf("%s: error %v (%T), want a JSON-RPC error", tc.uri, err, err)
			continue
		}
		if we.Code != tc.code || we.Message != tc.msg {
			t.Errorf("%s: code %d %q, want %d %q", tc.uri, we.Code, we.Message, tc.code, tc.msg)
		}
	}
}

func TestResourceMatching(t *testing.T) {
	byName := map[string]*resourceTemplate{}
	for _, rt := range resourceTemplates() {
		byName[rt.spec.Name] = rt
	}
	cases := []struct {
		name, uri string
		want      map[string]string
	}{
		{"get_sessions", "tmux://sessions", map[string]string{}},
		{"get_sessions", "tmux://sessions?socket_name=a+b%21", map[string]string{"socket_name": "a b!"}},
		{"get_sessions", "tmux://sessions?socket_name=&socket_name=x&socket_name=y&other=1", map[string]string{"socket_name": "x"}},
		{"get_sessions", "tmux://sessions?socket_name", map[string]string{}},
		{"get_sessions", "tmux://sessionsX", nil},
		{"get_session", "tmux://sessions/%41b%1%zz", map[string]string{"session_name": "Ab%1%zz"}},
		{"get_session", "tmux://sessions/a/windows", nil},
		{"get_session_windows", "tmux://sessions/a/windows", map[string]string{"session_name": "a"}},
		{"get_window", "tmux://sessions/w%C3%A9b/windows/1?socket_name=s", map[string]string{"session_name": "wéb", "window_index": "1", "socket_name": "s"}},
		{"get_pane", "tmux://panes/%2512", map[string]string{"pane_id": "%12"}},
		{"get_pane", "tmux://panes/%2512/content", nil},
		{"get_pane_content", "tmux://panes/%2512/content", map[string]string{"pane_id": "%12"}},
	}
	for _, tc := range cases {
		got := byName[tc.name].match(tc.uri)
		if (got == nil) != (tc.want == nil) || len(got) != len(tc.want) {
			t.Errorf("%s %s: %v, want %v", tc.name, tc.uri, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s %s: %s=%q, want %q", tc.name, tc.uri, k, got[k], v)
			}
		}
	}
}

func TestResourcePythonHelpers(t *testing.T) {
	for in, want := range map[string]string{
		"%41":        "A",
		"%1":         "%1",
		"%zz%4":      "%zz%4",
		"%C3%A9":     "é",
		"%FF":        "\ufffd",
		"%e2%82x":    "\ufffdx",
		"%F0%9F%98":  "\ufffd",
		"plain":      "plain",
		"%2512%":     "%12%",
		"a%20b+c":    "a b+c",
		"%C3%A9%ED1": "é\ufffd1",
	} {
		if got := pyUnquote(in); got != want {
			t.Errorf("pyUnquote(%q) = %q, want %q", in, got, want)
		}
	}
	v, err := pyfmt.DecodeOrdered([]byte(`{"a":[1,{}],"b":null,"c":"é\u2028😀\"\\\n\u0001\u007f","d":[],"e":true,"f":{"g":"h"}}`))
	if err != nil {
		t.Fatal(err)
	}
	// Python: json.dumps(..., indent=2)
	want := "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": null,\n  \"c\": \"\\u00e9\\u2028\\ud83d\\ude00\\\"\\\\\\n\\u0001\\u007f\",\n  \"d\": [],\n  \"e\": true,\n  \"f\": {\n    \"g\": \"h\"\n  }\n}"
	if got := pyIndentJSON(v); got != want {
		t.Errorf("pyIndentJSON:\n%s\nwant:\n%s", got, want)
	}
	if got := pyIndentJSON([]any{}); got != "[]" {
		t.Errorf("empty list: %q", got)
	}
}
