package mcp

import (
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/tools"
)

func TestListSessions(t *testing.T) {
	e := newEnv(t)
	var sessions []SessionInfo
	e.result("list_sessions", nil, &sessions)
	if len(sessions) != 1 || *sessions[0].SessionName != "fixture" || sessions[0].WindowCount != 1 {
		t.Fatalf("sessions = %+v", sessions)
	}
	if sessions[0].ActivePaneID == nil || *sessions[0].ActivePaneID != e.firstPane() {
		t.Fatalf("active pane = %v, want %s", sessions[0].ActivePaneID, e.firstPane())
	}
	e.tmux("new-session", "-d", "-s", "devbox")
	e.tmux("new-session", "-d", "-s", "DevOps")
	cases := []struct {
		filters any
		want    int
		err     string
	}{
		{nil, 3, ""},
		{map[string]any{}, 3, ""},
		{"", 3, ""},
		{map[string]any{"session_name": "devbox"}, 1, ""},
		{map[string]any{"session_name__contains": "dev"}, 1, ""},
		{map[string]any{"session_name__icontains": "DEV"}, 2, ""},
		{map[string]any{"session_name__startswith": "fix"}, 1, ""},
		{map[string]any{"session_name__regex": "^d.*x$"}, 1, ""},
		{map[string]any{"session_name": "nope"}, 0, ""},
		{map[string]any{"session_name__icontains": "dev", "session_name__endswith": "Ops"}, 1, ""},
		{`{"session_name": "devbox"}`, 1, ""},
		{map[string]any{"session_name__bogus": "x"}, 0, "Invalid filter operator 'bogus' in 'session_name__bogus'"},
		{"not json", 0, "Invalid filters JSON"},
		{`"a string"`, 0, "filters must be a JSON object, got str"},
		{`[1]`, 0, "filters must be a JSON object, got list"},
	}
	for _, tc := range cases {
		args := map[string]any{"filters": tc.filters}
		if tc.err != "" {
			e.fail("list_sessions", args, tc.err)
			continue
		}
		var got []SessionInfo
		e.result("list_sessions", args, &got)
		if len(got) != tc.want {
			t.Errorf("filters %v: %d sessions, want %d", tc.filters, len(got), tc.want)
		}
	}
}

func TestListSessionsDeadServer(t *testing.T) {
	e := newEnv(t)
	e.tmux("kill-server")
	res := e.call("list_sessions", nil)
	if res.IsError || len(res.Content) != 0 {
		t.Fatalf("dead server: isError=%v content=%v", res.IsError, text(res))
	}
}

func TestCreateSessionAndServerInfo(t *testing.T) {
	e := newEnv(t)
	var s SessionInfo
	e.ok("create_session", map[string]any{"session_name": "work", "window_name": "editor"}, &s)
	if *s.SessionName != "work" || !strings.HasPrefix(s.SessionID, "$") || s.ActivePaneID == nil || !strings.HasPrefix(*s.ActivePaneID, "%") {
		t.Fatalf("created %+v", s)
	}
	e.fail("create_session", map[string]any{"session_name": "work"}, "Session named work exists")
	e.fail("create_session", map[string]any{"session_name": "a.b"}, "Bad session name: contains periods")
	// Names mean themselves: tmux does not expand them.
	var lit SessionInfo
	e.ok("create_session", map[string]any{"session_name": "a#(true)#Sb", "window_name": "w#{E:#{a:35}(true)}"}, &lit)
	if *lit.SessionName != "a#(true)#Sb" {
		t.Fatalf("literal session name %+v", lit)
	}
	if got := e.tmux("list-windows", "-t", lit.SessionID, "-F", "#{window_name}"); got != "w#{E:#{a:35}(true)}" {
		t.Fatalf("literal window name %q", got)
	}
	e.ok("create_session", map[string]any{"session_name": "envy", "environment": `{"FOO": "bar"}`}, nil)
	if got := e.tmux("show-environment", "-t", "envy", "FOO"); got != "FOO=bar" {
		t.Fatalf("environment = %q", got)
	}
	e.fail("create_session", map[string]any{"environment": "{bad"}, "Invalid environment JSON")
	e.fail("create_session", map[string]any{"environment": "[1]"}, "environment must be a JSON object")
	var info tools.ServerInfo
	e.ok("get_server_info", nil, &info)
	if !info.IsAlive || info.SessionCount != 4 || info.Version == nil || *info.SocketName != e.socket {
		t.Fatalf("server info %+v", info)
	}
}

func TestKillServerGuard(t *testing.T) {
	e := newEnv(t)
	path := e.tmux("display-message", "-p", "#{socket_path}")
	e.setVar("TMUX", path+",1,$0")
	e.setVar("TMUX_PANE", e.firstPane())
	e.fail("kill_server", nil, "Refusing to kill")
	e.setVar("TMUX", "/tmp/unrelated-socket,1,$0")
	if got := e.ok("kill_server", nil, nil); !strings.Contains(got, "killed") {
		t.Fatalf("kill_server: %q", got)
	}
}

func TestListServers(t *testing.T) {
	e := newEnv(t)
	var servers []tools.ServerInfo
	e.result("list_servers", nil, &servers)
	found := false
	for _, s := range servers {
		if s.SocketName != nil && *s.SocketName == e.socket && s.IsAlive {
			found = true
		}
	}
	if !found {
		t.Fatalf("list_servers did not find %s: %+v", e.socket, servers)
	}
	e.setVar("TMUX_TMPDIR", t.TempDir()+"/missing")
	path := e.tmux("display-message", "-p", "#{socket_path}")
	regular := t.TempDir() + "/file"
	_ = writeFile(regular, "x")
	servers = nil
	e.result("list_servers", map[string]any{"extra_socket_paths": []any{path, "/nonexistent/sock", regular}}, &servers)
	if len(servers) != 1 || *servers[0].SocketPath != path {
		t.Fatalf("extra paths: %+v", servers)
	}
}
