package transport

import (
	"bytes"
	"testing"
)

func TestBoundedBufferChunks(t *testing.T) {
	for _, sizes := range [][]int{{}, {0}, {1}, {511, 1, 600}, {chunkSize}, {chunkSize + 1}, {3 * chunkSize, 7, chunkSize - 7, 1}} {
		w := &boundedBuffer{budget: newOutputBudget()}
		var want []byte
		for i, n := range sizes {
			p := bytes.Repeat([]byte{byte('a' + i)}, n)
			if k, err := w.Write(p); k != n || err != nil {
				t.Fatalf("%v: Write(%d) = %d, %v", sizes, n, k, err)
			}
			want = append(want, p...)
		}
		if got := w.Bytes(); !bytes.Equal(got, want) || !bytes.Equal(w.Bytes(), want) {
			t.Errorf("%v: Bytes() differs (%d bytes, want %d)", sizes, len(got), len(want))
		}
	}
}
