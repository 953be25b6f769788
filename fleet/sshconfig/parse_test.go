package sshconfig

import (
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
		if ok && (ln.keyword == "" || ln.rest != "" && (ln.rest[0] == ' ' || ln.rest[0] == '\t')) {
			t.Errorf("parseLine(%q) = %+v", line, ln)
		}
	})
}
