package redact

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The want values were produced by the reference server's own
// _summarize_args (libtmux-mcp 552b4f4, src/libtmux_mcp/middleware.py) run
// on the same input with json.dumps(..., ensure_ascii=False,
// separators=(",", ":")).
func TestRedactJSONMatchesReference(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{name: "hello digest",
			in:   `{"keys":"hello"}`,
			want: `{"keys":{"len":5,"sha256_prefix":"2cf24dba5fb0"}}`},
		{name: "non-sensitive passthrough",
			in:   `{"pane_id":"%1","bracket":true,"lines":50,"ratio":0.5,"x":null}`,
			want: `{"pane_id":"%1","bracket":true,"lines":50,"ratio":0.5,"x":null}`},
		{name: "every sensitive string",
			in:   `{"keys":"","text":"héllo wörld","command":"rm -rf /","value":"s3cr3t","content":"buf","shell":"bash -l"}`,
			want: `{"keys":{"len":0,"sha256_prefix":"e3b0c44298fc"},"text":{"len":11,"sha256_prefix":"a1003f7d04a4"},"command":{"len":8,"sha256_prefix":"5c7923bd67b0"},"value":{"len":6,"sha256_prefix":"4e738ca5563c"},"content":{"len":3,"sha256_prefix":"3ef31aff63c2"},"shell":{"len":7,"sha256_prefix":"daa8498aef91"}}`},
		{name: "environment object values stringified",
			in:   `{"environment":{"FOO":"bar","N":1,"F":1.5,"B":true,"Z":null,"L":[1,"a",false,null,2.0],"D":{"x":"y'z","n":[]}}}`,
			want: `{"environment":{"FOO":{"len":3,"sha256_prefix":"fcde2b2edba5"},"N":{"len":1,"sha256_prefix":"6b86b273ff34"},"F":{"len":3,"sha256_prefix":"9f29a130438b"},"B":{"len":4,"sha256_prefix":"3cbc87c7681f"},"Z":{"len":4,"sha256_prefix":"dc937b598926"},"L":{"len":26,"sha256_prefix":"c6e1fbc4f48f"},"D":{"len":21,"sha256_prefix":"16a5eba757d7"}}}`},
		{name: "environment JSON string is one scalar",
			in:   `{"environment":"{\"FOO\":\"bar\"}"}`,
			want: `{"environment":{"len":13,"sha256_prefix":"be7c5980b9b6"}}`},
		{name: "python float and int str",
			in:   `{"environment":{"a":1e16,"b":1e-5,"c":0.0001,"d":123.0,"e":-0.0,"f":1e400,"g":1E2,"h":123456789012345678901234567890,"i":-0,"j":0.1,"k":1e15,"l":3.14159e-10,"m":-2.5e+20}}`,
			want: `{"environment":{"a":{"len":5,"sha256_prefix":"a14483852059"},"b":{"len":5,"sha256_prefix":"5a9530d3c6d5"},"c":{"len":6,"sha256_prefix":"e539aebac7fd"},"d":{"len":5,"sha256_prefix":"0589abecb964"},"e":{"len":4,"sha256_prefix":"c26617c7ccbc"},"f":{"len":3,"sha256_prefix":"e99270c4fa9f"},"g":{"len":5,"sha256_prefix":"43b87f618caa"},"h":{"len":30,"sha256_prefix":"f54e5c8f8106"},"i":{"len":1,"sha256_prefix":"5feceb66ffc8"},"j":{"len":3,"sha256_prefix":"14be4b45f18e"},"k":{"len":18,"sha256_prefix":"c02731631f61"},"l":{"len":11,"sha256_prefix":"871859454a11"},"m":{"len":8,"sha256_prefix":"c3bbf9f09852"}}}`},
		{name: "python repr quoting in nested values",
			in:   `{"environment":{"q1":["it's"],"q2":["a\"b"],"q3":["it's \"x\""],"q4":["tab\t nl\n cr\r bs\\ del\u007f nul\u0001"],"q5":["\u00a0\u00e9\u0085\u200b\u2028 日本 😀"],"q6":{"k'":"v"}}}`,
			want: `{"environment":{"q1":{"len":8,"sha256_prefix":"15522db5ef12"},"q2":{"len":7,"sha256_prefix":"34b0f2e82545"},"q3":{"len":13,"sha256_prefix":"698b346b9799"},"q4":{"len":40,"sha256_prefix":"f35e7a4af444"},"q5":{"len":30,"sha256_prefix":"7312f40c58ab"},"q6":{"len":11,"sha256_prefix":"c08f19e259d5"}}}`},
		{name: "long string truncated",
			in:   `{"session_name":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`,
			want: `{"session_name":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA...<truncated>"}`},
		{name: "200 code points kept, 201 cut",
			in:   `{"a":"éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé","b":"ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé"}`,
			want: `{"a":"éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé","b":"ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé"}`},
		{name: "send_keys_batch operations",
			in:   `{"operations":[{"pane_id":"%1","keys":"ls -la","enter":true,"literal":false,"suppress_history":true,"session_name":null,"session_id":"$1","window_id":"@1"},{"keys":5,"extra":"x","pane_id":null,"enter":1,"literal":"yes"},"str",3,null,[1],{"pane_id":"%2","keys":"secret","operations":[{"keys":"y"}]}],"socket_name":"s"}`,
			want: `{"operations":[{"pane_id":"%1","keys":{"len":6,"sha256_prefix":"1de700c29687"},"enter":true,"literal":false,"suppress_history":true,"session_name":null,"session_id":"$1","window_id":"@1"},{"keys":{"type":"int","redacted":true},"extra":{"type":"str","redacted":true},"pane_id":null,"enter":{"type":"int","redacted":true},"literal":{"type":"str","redacted":true}},{"type":"str","redacted":true},{"type":"int","redacted":true},{"type":"NoneType","redacted":true},{"type":"list","redacted":true},{"pane_id":"%2","keys":{"len":6,"sha256_prefix":"2bb80d537b1d"},"operations":{"type":"list","redacted":true}}],"socket_name":"s"}`},
		{name: "generic batch operations",
			in:   `{"operations":[{"tool":"send_keys","arguments":{"pane_id":"%1","keys":"secret","enter":true}},{"tool":5,"arguments":"x","other":1},{"arguments":{"operations":[{"tool":"paste_text","arguments":{"text":"pw"}}]}},{"tool":"capture_pane"}],"on_error":"continue"}`,
			want: `{"operations":[{"tool":"send_keys","arguments":{"pane_id":"%1","keys":{"len":6,"sha256_prefix":"2bb80d537b1d"},"enter":true}},{"tool":{"type":"int","redacted":true},"arguments":{"type":"str","redacted":true},"other":{"type":"int","redacted":true}},{"arguments":{"operations":[{"tool":"paste_text","arguments":{"text":{"len":2,"sha256_prefix":"30c952fab122"}}}]}},{"tool":"capture_pane"}],"on_error":"continue"}`},
		{name: "operations not a list",
			in:   `{"operations":"abc"}`,
			want: `{"operations":{"type":"str","redacted":true}}`},
		{name: "operations an object",
			in:   `{"operations":{"keys":"x"}}`,
			want: `{"operations":{"type":"dict","redacted":true}}`},
		{name: "sensitive null passes, unicode len",
			in:   `{"text":null,"keys":"日本語"}`,
			want: `{"text":null,"keys":{"len":3,"sha256_prefix":"77710aedc74e"}}`},
		{name: "near-miss names pass through",
			in:   `{"filters":{"session_name":"x"},"keys_list":["a"],"Keys":"visible"}`,
			want: `{"filters":{"session_name":"x"},"keys_list":["a"],"Keys":"visible"}`},
		{name: "repeated key keeps first position, last value",
			in:   `{"dup":1,"keys":"a","dup":2}`,
			want: `{"dup":2,"keys":{"len":1,"sha256_prefix":"ca978112ca1b"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := string(JSON(json.RawMessage(tt.in)))
			if got != tt.want {
				t.Errorf("JSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

// Sensitive arguments of other types are redacted here, where the reference
// server would pass them through (a documented divergence).
func TestRedactSensitiveOtherTypes(t *testing.T) {
	got := string(JSON(json.RawMessage(`{"keys":["rm","-rf"],"value":42,"shell":true,"text":1.5,"command":null}`)))
	want := `{"keys":{"type":"list","redacted":true},"value":{"type":"int","redacted":true},` +
		`"shell":{"type":"bool","redacted":true},"text":{"type":"float","redacted":true},"command":null}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestRedactJSONEdgeInputs(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"empty", ``, `{}`},
		{"null", ` null `, `{}`},
		{"empty object", `{}`, `{}`},
		{"array", `["secret"]`, `{"type":"list","redacted":true}`},
		{"string", `"secret"`, `{"type":"str","redacted":true}`},
		{"invalid", `{"keys":"secret"`, `{"invalid_json":{"len":16,"sha256_prefix":"` + digestHex(`{"keys":"secret"`) + `"}}`},
		{"trailing data", `{} {"keys":"secret"}`, `{"invalid_json":{"len":20,"sha256_prefix":"` + digestHex(`{} {"keys":"secret"}`) + `"}}`},
		{"html not escaped", `{"a":"<b>&"}`, `{"a":"<b>&"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := string(JSON(json.RawMessage(tt.in)))
			if got != tt.want {
				t.Errorf("JSON(%q) = %s, want %s", tt.in, got, tt.want)
			}
			if strings.Contains(got, "secret") {
				t.Errorf("raw secret in %s", got)
			}
		})
	}
}

func digestHex(s string) string {
	v, _ := digest(s).Get("sha256_prefix")
	return v.(string)
}

func TestRedactMap(t *testing.T) {
	in := map[string]any{
		"keys":        "hello",
		"pane_id":     "%1",
		"lines":       50,
		"ratio":       1.5,
		"environment": map[string]string{"TOKEN": "hunter2"},
		"operations": []map[string]any{
			{"tool": "send_keys", "arguments": map[string]any{"keys": "hunter2", "pane_id": "%2"}},
		},
		"session_name": strings.Repeat("x", 300),
	}
	got := Args(in)
	want := map[string]any{
		"keys":         map[string]any{"len": json.Number("5"), "sha256_prefix": "2cf24dba5fb0"},
		"pane_id":      "%1",
		"lines":        json.Number("50"),
		"ratio":        json.Number("1.5"),
		"environment":  map[string]any{"TOKEN": map[string]any{"len": json.Number("7"), "sha256_prefix": "f52fbd32b2b3"}},
		"session_name": strings.Repeat("x", 200) + truncationSuffix,
		"operations": []any{map[string]any{
			"tool": "send_keys",
			"arguments": map[string]any{
				"keys":    map[string]any{"len": json.Number("7"), "sha256_prefix": "f52fbd32b2b3"},
				"pane_id": "%2",
			},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		t.Errorf("Redact:\n got %s\nwant %s", a, b)
	}
	if len(Args(nil)) != 0 {
		t.Errorf("Args(nil) not empty")
	}
	if got := Args(map[string]any{"c": make(chan int)}); got["redacted"] != true {
		t.Errorf("unencodable args: %v", got)
	}
}

func TestRedactDeepNestingBounded(t *testing.T) {
	in := strings.Repeat(`{"operations":[{"tool":"t","arguments":`, 300) + `{"keys":"secret"}` + strings.Repeat(`}]}`, 300)
	got := string(JSON(json.RawMessage(in)))
	if strings.Contains(got, "secret") || !json.Valid([]byte(got)) {
		t.Errorf("deep nesting: secret leaked or invalid JSON")
	}
}

func BenchmarkRedactJSON(b *testing.B) {
	args := json.RawMessage(`{"pane_id":"%3","keys":"make -j8 test 2>&1 | tee build.log","enter":true,"socket_name":null}`)
	for b.Loop() {
		JSON(args)
	}
}
