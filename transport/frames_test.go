package transport

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestSplitFrames(t *testing.T) {
	const m = "M1x"
	tests := []struct {
		name      string
		in        string
		stopAfter int // 0: never stop
		want      []Frame
		rest      string
		err       error
	}{
		{"none", "", 0, nil, "", io.EOF},
		{"one", "out\nM1x 0\n", 0, []Frame{{Data: []byte("out\n"), Trailer: "0"}}, "", io.EOF},
		{"two and a rest", "a\nM1x 1\nM1x 2 x\nleft", 0,
			[]Frame{{Data: []byte("a\n"), Trailer: "1"}, {Data: []byte{}, Trailer: "2 x"}}, "left", io.EOF},
		{"marker line unfinished", "a M1x 3", 0, nil, "a M1x 3", io.EOF},
		{"send stops", "M1x 1\nM1x 2\n", 1, []Frame{{Data: []byte{}, Trailer: "1"}}, "", nil},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			var got []Frame
			rest, err := SplitFrames(r, []byte(m), func(f Frame) bool {
				got = append(got, f)
				return tt.stopAfter == 0 || len(got) < tt.stopAfter
			})
			if err != tt.err || string(rest) != tt.rest || len(got) != len(tt.want) {
				t.Fatalf("%s (one byte %v): frames %q rest %q err %v; want %q %q %v", tt.name, oneByte, got, rest, err, tt.want, tt.rest, tt.err)
			}
			for i := range got {
				if string(got[i].Data) != string(tt.want[i].Data) || got[i].Trailer != tt.want[i].Trailer {
					t.Errorf("%s (one byte %v): frame %d = %q, want %q", tt.name, oneByte, i, got[i], tt.want[i])
				}
			}
		}
	}
}

func TestSplitFramesBounded(t *testing.T) {
	r := io.LimitReader(zeros{}, int64(MaxOutput)+64<<10)
	_, err := SplitFrames(r, []byte("M1x"), func(Frame) bool { return true })
	if !errors.Is(err, ErrOutputTooLarge) {
		t.Fatalf("err = %v, want ErrOutputTooLarge", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
