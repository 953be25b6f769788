package tools

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
	"github.com/fleetmux/fleetmux/tmux"
)

func TestCaptureSinceCursorRoundTrip(t *testing.T) {
	st := tmux.PaneState{HistorySize: 7, CursorY: 3, PaneHeight: 24, PanePid: "4242"}
	s := encodeSinceCursor("%5", st, []string{"$ ", "", "x"})
	cur, err := decodeSinceCursor(s)
	if err != nil {
		t.Fatal(err)
	}
	if cur.PaneID != "%5" || cur.PanePid != "4242" || cur.HistorySize != 7 || cur.PaneHeight != 24 || cur.AnchorAbs != 10 ||
		cur.AnchorHash == nil || *cur.AnchorHash != lineHash("$ ") || !reflect.DeepEqual(cur.BelowHashes, []string{lineHash(""), lineHash("x")}) {
		t.Fatalf("round trip: %+v", cur)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, "capture-since-v1:"))
	want := `{"anchor_abs":10,"anchor_hash":"` + lineHash("$ ") + `","below_hashes":["` + lineHash("") + `","` + lineHash("x") + `"],"history_size":7,"pane_height":24,"pane_id":"%5","pane_pid":"4242","version":1}`
	if string(raw) != want {
		t.Fatalf("payload\n got %s\nwant %s", raw, want)
	}
	empty := encodeSinceCursor("%5", st, nil)
	raw, _ = base64.RawURLEncoding.DecodeString(strings.TrimPrefix(empty, "capture-since-v1:"))
	if !strings.Contains(string(raw), `"anchor_hash":null,"below_hashes":[]`) {
		t.Fatalf("no rows: %s", raw)
	}
	if got := pyfmt.JSONQuote("é\"\x01😀"); got != `"\u00e9\"\u0001\ud83d\ude00"` {
		t.Fatalf("pyJSONString = %s", got)
	}
}

func TestLimitTail(t *testing.T) {
	for _, tc := range []struct {
		lines          []string
		maxLines       *int
		maxBytes       *int
		want           []string
		tLines, tBytes int
	}{
		{[]string{"a", "b", "c"}, nil, nil, []string{"a", "b", "c"}, 0, 0},
		{[]string{"aa", "bb", "cc"}, intRef(2), nil, []string{"bb", "cc"}, 1, 2},
		{[]string{"aa", "bb", "cc"}, intRef(1), nil, []string{"cc"}, 2, 5},
		{[]string{"aaaa", "bb", "cc"}, nil, intRef(5), []string{"bb", "cc"}, 1, 5},
		{[]string{"abcdef"}, nil, intRef(4), []string{"cdef"}, 0, 2},
		{[]string{"xx", "héllo"}, nil, intRef(4), []string{"llo"}, 1, 5},
		{[]string{}, intRef(3), intRef(3), []string{}, 0, 0},
	} {
		got := limitTail(tc.lines, tc.maxLines, tc.maxBytes)
		if !reflect.DeepEqual(got.lines, tc.want) || got.truncLines != tc.tLines || got.truncBytes != tc.tBytes || got.truncated != (tc.tLines+tc.tBytes > 0) {
			t.Errorf("limitTail(%q) = %+v, want %q %d %d", tc.lines, got, tc.want, tc.tLines, tc.tBytes)
		}
	}
}
