package fleet

import (
	"errors"
	"reflect"
	"testing"
)

func TestPercentDollarExpand(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "V" {
			return "val", true
		}
		return "", false
	}
	toks := tokens{'h': "host", 'p': "22"}
	tests := []struct {
		give, want string
		dollar     bool
		wantErr    bool
	}{
		{give: "%h:%p", want: "host:22"},
		{give: "100%%", want: "100%"},
		{give: "%%h", want: "%h"},
		{give: "%x", wantErr: true},
		{give: "trailing%", wantErr: true},
		{give: "${V}/%h", want: "val/host", dollar: true},
		{give: "${V}", want: "${V}", dollar: false},
		{give: "$V", want: "$V", dollar: true},
		{give: "${MISSING}", wantErr: true, dollar: true},
		{give: "${}", wantErr: true, dollar: true},
		{give: "${V", wantErr: true, dollar: true},
	}
	for _, tt := range tests {
		got, err := percentDollarExpand(tt.give, toks, tt.dollar, env)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q, err %v", tt.give, got, err, tt.want, tt.wantErr)
		}
	}
}

var errUnknownUser = errors.New("unknown user")

func TestTildeExpand(t *testing.T) {
	lookup := func(u string) (string, error) {
		if u == "bob" {
			return "/home/bob", nil
		}
		return "", errUnknownUser
	}
	tests := map[string]string{
		"~": "/root/", "~/": "/root/", "~/x": "/root/x", "~//x": "/root/x", "~bob": "/home/bob/",
		"~bob/k": "/home/bob/k", "/abs": "/abs", "rel~": "rel~",
	}
	for give, want := range tests {
		got, err := tildeExpand(give, "/root", lookup)
		if err != nil || got != want {
			t.Errorf("tildeExpand(%q) = %q, %v; want %q", give, got, err, want)
		}
	}
	if _, err := tildeExpand("~nobody/x", "/root", lookup); err == nil {
		t.Error("unknown user expanded")
	}
}

func TestClientTokens(t *testing.T) {
	env := &localEnv{home: "/home/u", localUser: "u", uid: 1000, thisHost: "box.lan",
		getenv: func(string) (string, bool) { return "", false }}
	r := Resolved{Alias: "web", HostName: "web.example.com", Port: "2200", User: "deploy"}
	got, err := percentDollarExpand("%d/%u/%i/%l/%L/%n/%h/%p/%r/%k/%%", clientTokens(env, r), true, env.getenv)
	if want := "/home/u/u/1000/box.lan/box/web/web.example.com/2200/deploy/web/%"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if got, _ := percentDollarExpand("%C", clientTokens(env, r), true, env.getenv); got != connectionHash("box.lan", "web.example.com", "2200", "deploy") || len(got) != 40 {
		t.Errorf("%%C = %q", got)
	}
	r.HostKeyAlias = "key-alias"
	if got, _ := percentDollarExpand("%k", clientTokens(env, r), true, env.getenv); got != "key-alias" {
		t.Errorf("%%k = %q", got)
	}
	// OpenSSH 9.2 does not know %j.
	if _, err := percentDollarExpand("%j", clientTokens(env, r), true, env.getenv); err == nil {
		t.Error("%j expanded")
	}
}

func TestParseHop(t *testing.T) {
	tests := []struct {
		give    string
		want    hop
		wantErr bool
	}{
		{give: "bastion", want: hop{host: "bastion", port: -1}},
		{give: "alice@jump1:2222", want: hop{user: "alice", host: "jump1", port: 2222}},
		{give: "[::1]:23", want: hop{host: "::1", port: 23}},
		{give: "[1.2.3.4]", want: hop{host: "1.2.3.4", port: -1}},
		{give: "u@x@jumpuri", want: hop{user: "u@x", host: "jumpuri", port: -1}},
		{give: "ssh://carol@jump3:24", want: hop{user: "carol", host: "jump3", port: 24}},
		{give: "ssh://u%40x;fp=1@h", want: hop{user: "u@x", host: "h", port: -1}},
		{give: "ssh://[fe80::1]:2", want: hop{host: "fe80::1", port: 2}},
		{give: "bad;hop", want: hop{host: "bad;hop", port: -1}}, // ssh -G judges the name
		{give: "@h", wantErr: true},
		{give: "h:0", wantErr: true},
		{give: "h:65536", wantErr: true},
		{give: "h:x", wantErr: true},
		{give: "h/path", wantErr: true},
		{give: "[::1", wantErr: true},
		{give: "[::1]x", wantErr: true},
		{give: "", wantErr: true},
		{give: "ssh://@h", wantErr: true},
		{give: "ssh://u%4@h", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseHop(tt.give)
		if (err != nil) != tt.wantErr || err == nil && got != tt.want {
			t.Errorf("parseHop(%q) = %+v, %v; want %+v, err %v", tt.give, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzParseHop(f *testing.F) {
	for _, s := range []string{"a@b:2", "[::1]:22", "ssh://u@h:1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHop(s)
		if err == nil && (h.host == "" || h.port == 0 || h.port > 65535) {
			t.Errorf("parseHop(%q) = %+v", s, h)
		}
	})
}

func TestRejoinSpaced(t *testing.T) {
	known := map[string]bool{"/a b/c": true, "/x y z": true}
	tests := []struct {
		give, want []string
	}{
		{[]string{"/a", "b/c", "/d"}, []string{"/a b/c", "/d"}},
		{[]string{"/d", "/x", "y", "z"}, []string{"/d", "/x y z"}},
		{[]string{"/x", "y"}, []string{"/x", "y"}},
		{[]string{"/a"}, []string{"/a"}},
	}
	for _, tt := range tests {
		if got := rejoinSpaced(tt.give, known); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("rejoinSpaced(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
	env := &localEnv{home: "/h o", getenv: func(string) (string, bool) { return "", false },
		lookupHome: func(string) (string, error) { return "", errUnknownUser }}
	got := spacedPaths([]string{"~/.ssh/known_hosts", "/plain", "%d/kh_%h", "/s p"}, env, Resolved{HostName: "w"})
	want := map[string]bool{"/h o/.ssh/known_hosts": true, "/h o/kh_w": true, "/s p": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spacedPaths = %v, want %v", got, want)
	}
}
