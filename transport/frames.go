package transport

import (
	"bytes"
	"crypto/rand"
	"io"
	"strings"
)

// Frame is what a stream printed up to one marker line: the bytes before
// the marker and the rest of the marker line (without the space after
// the marker and without the newline).
type Frame struct {
	Data    []byte
	Trailer string
}

// NewMarker is a fresh frame marker: 26 random base32 characters (130
// bits), sent to the remote loop on its stdin so no process's arguments
// show it and no command's output can forge it.
func NewMarker() []byte { return []byte(rand.Text()) }

// SplitFrames reads r, splits it at marker lines and hands each frame to
// send until send returns false (then it returns nil, nil). Otherwise it
// returns the bytes read after the last frame with the read error (io.EOF
// when r ended), or with ErrOutputTooLarge once more than MaxOutput
// bytes have come without a marker. The command channel and the remote
// watcher both speak this framing.
func SplitFrames(r io.Reader, marker []byte, send func(Frame) bool) (rest []byte, err error) {
	var buf []byte
	chunk := make([]byte, 32<<10)
	from := 0 // where to resume looking for the marker
	for {
		for {
			i := bytes.Index(buf[from:], marker)
			if i < 0 {
				from = max(0, len(buf)-len(marker)+1)
				break
			}
			i += from
			tail := buf[i+len(marker):]
			j := bytes.IndexByte(tail, '\n')
			if j < 0 {
				from = i
				break
			}
			f := Frame{Data: buf[:i:i], Trailer: strings.TrimPrefix(string(tail[:j]), " ")}
			buf = append([]byte(nil), tail[j+1:]...)
			from = 0
			if !send(f) {
				return nil, nil
			}
		}
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if len(buf) > MaxOutput {
			return buf[:0], errOutputTooLarge()
		}
		if err != nil {
			return buf, err
		}
	}
}
