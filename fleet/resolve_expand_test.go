package fleet

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		give    string
		wantOK  bool
		keyword string
		rest    string
		args    []string
		argErr  bool
	}{
		{give: "", wantOK: false},
		{give: "   # comment", wantOK: false},
		{give: "#Host x", wantOK: false},
		{give: "Host a b", wantOK: true, keyword: "host", rest: "a b", args: []string{"a", "b"}},
		{give: "  PORT=22", wantOK: true, keyword: "port", rest: "22", args: []string{"22"}},
		{give: "Port = 22", wantOK: true, keyword: "port", rest: "22", args: []string{"22"}},
		{give: "Port==22", wantOK: true, keyword: "port", rest: "=22", args: []string{"=22"}},
		{give: "User\t\tbob  \t\f", wantOK: true, keyword: "user", rest: "bob", args: []string{"bob"}},
		{give: `IdentityFile "a b" # c`, wantOK: true, keyword: "identityfile", rest: `"a b" # c`, args: []string{"a b"}},
		{give: `IdentityFile a\ b\"c 'd e'`, wantOK: true, keyword: "identityfile", rest: `a\ b\"c 'd e'`, args: []string{`a b"c`, "d e"}},
		{give: `IdentityFile "a\ b" x\y`, wantOK: true, keyword: "identityfile", rest: `"a\ b" x\y`, args: []string{`a\ b`, `x\y`}},
		{give: `"User" quoted`, wantOK: true, keyword: "user", rest: "quoted", args: []string{"quoted"}},
		{give: `User "open`, wantOK: true, keyword: "user", rest: `"open`, argErr: true},
		{give: "User", wantOK: true, keyword: "user", rest: ""},
		{give: "User x#y", wantOK: true, keyword: "user", rest: "x#y", args: []string{"x#y"}},
		{give: `User ""`, wantOK: true, keyword: "user", rest: `""`, args: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			ln, ok := parseLine(tt.give)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				return
			}
			if ln.keyword != tt.keyword || ln.rest != tt.rest || (ln.argErr != nil) != tt.argErr {
				t.Errorf("got keyword %q rest %q argErr %v", ln.keyword, ln.rest, ln.argErr)
			}
			if !tt.argErr && !reflect.DeepEqual(ln.args, tt.args) {
				t.Errorf("args = %q, want %q", ln.args, tt.args)
			}
		})
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"Host a", `User "x`, "Port=22", `a\ b 'c d' "e\"f"`, "= = =", "\"\"\"", "Match host=a all"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		ln, ok := parseLine(line)
		if ok && ln.rest != "" && ln.keyword == "match" {
			in := &interp{
				env: &goEnv{getenv: func(string) (string, bool) { return "", false }}, o: newGoOptions(),
				host: "h", originalHost: "h",
				execFn: func(string) (int, error) { return 0, nil },
			}
			_, _, _ = in.matchLine(ln.rest, &cfgFile{path: "fuzz"}, &ln)
		}
		o := newGoOptions()
		_ = parseJump(line, o, true, true)
		_, _ = percentDollarExpand(line, tokens{'h': "x"}, true, func(string) (string, bool) { return "v", true })
		_ = convtime(line)
		_, _ = numericHost(line, afAny)
	})
}

func TestConvtime(t *testing.T) {
	tests := map[string]int{
		"0": 0, "30": 30, "90m": 5400, "1h30m": 5400, "2d": 172800, "1w": 604800, "1m30s": 90,
		"10S": 10, "5M": 300, "": -1, "x": -1, "5x": -1, "-5": -1, "1h-5m": -1,
		"2147483647": 2147483647, "2147483648": -1, "100000w": -1, "+5": 5,
	}
	for give, want := range tests {
		if got := convtime(give); got != want {
			t.Errorf("convtime(%q) = %d, want %d", give, got, want)
		}
	}
}

func TestA2port(t *testing.T) {
	tests := map[string]int{"22": 22, "010": 10, "65535": 65535, "65536": -1, "ssh": 22, "nope-service": -1, "0": 0, "-1": -1}
	for give, want := range tests {
		if got := a2port(give); got != want {
			t.Errorf("a2port(%q) = %d, want %d", give, got, want)
		}
	}
}

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

func TestNumericHost(t *testing.T) {
	tests := []struct {
		give string
		af   int
		want string
		ok   bool
	}{
		{"127.1", afAny, "127.0.0.1", true},
		{"0x7f.0.0.1", afAny, "127.0.0.1", true},
		{"2130706433", afAny, "127.0.0.1", true},
		{"010.0.0.1", afAny, "8.0.0.1", true},
		{"1.2.3.256", afAny, "", false},
		{"1.2.65536", afAny, "", false},
		{"1.2.65535", afAny, "1.2.255.255", true},
		{"09.1.1.1", afAny, "", false},
		{"web1", afAny, "", false},
		{"127.0.0.1", afInet6, "", false},
		{"::1", afInet, "", false},
		{"0:0::0:1", afAny, "::1", true},
		{"::FFFF:127.0.0.1", afAny, "::ffff:127.0.0.1", true},
		{"::1.2.3.4", afAny, "::1.2.3.4", true},
		{"1:0:0:2:0:0:0:3", afAny, "1:0:0:2::3", true},
		{"1:0:2:3:4:5:6:7", afAny, "1:0:2:3:4:5:6:7", true},
		{"fe80::1%99", afAny, "fe80::1%99", true},
		{"fe80::1%no-such-if0", afAny, "", false},
	}
	for _, tt := range tests {
		got, ok := numericHost(tt.give, tt.af)
		if got != tt.want || ok != tt.ok {
			t.Errorf("numericHost(%q) = %q, %v; want %q, %v", tt.give, got, ok, tt.want, tt.ok)
		}
	}
	// Without an embedded IPv4 form, inet_ntop and netip agree.
	for _, s := range []string{"2001:db8::1", "2001:db8:0:0:1:0:0:1", "::", "1::", "::2:3:4:5:6:7:8"} {
		a := netip.MustParseAddr(s)
		if got := inetNtop6(a.As16()); got != a.String() {
			t.Errorf("inetNtop6(%s) = %q, netip %q", s, got, a.String())
		}
	}
}

func TestMatchPatternList(t *testing.T) {
	tests := []struct {
		s, list string
		lower   bool
		want    int
	}{
		{"web1", "web*", false, 1},
		{"web1", "web?", false, 1},
		{"web", "web?", false, 0},
		{"web1", "db*,web1", false, 1},
		{"web1", "web*,!web1", false, -1},
		{"WEB1", "web1", false, 0},
		{"web1", "WEB1", true, 1},
		{"", ",a", false, 1},
		{"", "a,", false, 0},
		{"a", "", false, 0},
		{"x", "!", false, 0},
	}
	for _, tt := range tests {
		if got := matchPatternList(tt.s, tt.list, tt.lower); got != tt.want {
			t.Errorf("matchPatternList(%q, %q) = %d, want %d", tt.s, tt.list, got, tt.want)
		}
	}
}

func TestParseJump(t *testing.T) {
	tests := []struct {
		give    string
		strict  bool
		want    string // formatJump, "" for none
		wantErr bool
	}{
		{give: "bastion", want: "bastion"},
		{give: "a@b:2,c,ssh://d@e:3", want: "a@b:2,c,d@e:3"},
		{give: "1.2.3.4", want: "[1.2.3.4]"},
		{give: "[::1]:22", want: "[::1]:22"},
		{give: "a,b # comment, with comma", want: "a,b"},
		{give: "a b,c", want: "a"},
		{give: "h:ssh", want: "h:22"},
		{give: "x, y", wantErr: true},
		{give: "a,,b", wantErr: true},
		{give: "@h", wantErr: true},
		{give: "h:0", wantErr: true},
		{give: "ssh://h/path", wantErr: true},
		{give: "a;b", want: "a;b"},
		{give: "a;b", strict: true, wantErr: true},
		{give: "u;x@h", strict: true, wantErr: true},
	}
	for _, tt := range tests {
		o := newGoOptions()
		err := parseJump(tt.give, o, tt.strict, true)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseJump(%q) err = %v", tt.give, err)
			continue
		}
		if err != nil {
			continue
		}
		got := ""
		if o.jumpHost != nil {
			got = formatJump(o)
		}
		if got != tt.want {
			t.Errorf("parseJump(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
	// "none" disables jumping and locks the value.
	o := newGoOptions()
	if err := parseJump("none", o, false, true); err != nil || o.jumpHost == nil || *o.jumpHost != "none" {
		t.Fatalf("none: %v %v", err, o.jumpHost)
	}
	_ = parseJump("later", o, false, true)
	if *o.jumpHost != "none" {
		t.Errorf("a later ProxyJump overrode none")
	}
}
