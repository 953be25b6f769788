package store

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// benchArgs are the audit summary of a send_keys call (what mcp hands the
// store: the keys already digested).
var benchArgs = json.RawMessage(`{"pane_id":"%3","keys":{"len":35,"sha256_prefix":"5f1d0c0e8a47"},"enter":true,"socket_name":null}`)

// BenchmarkAppend measures one committed audit record (open, write
// transaction with fdatasync, close) and reports the median and p99 too.
func BenchmarkAppend(b *testing.B) {
	s := openTemp(b)
	ctx := context.Background()
	rec := Record{PID: 4242, SessionID: "0f8e2c1a9b7d4e6f", Client: "claude-code", ClientVersion: "2.1.0",
		Host: "devbox-3", Tool: "send_keys", Args: benchArgs, Outcome: OutcomeOK, Duration: 3 * time.Millisecond}
	benchLatencies(b, func() error { return s.Append(ctx, rec) })
}

func benchLatencies(b *testing.B, op func() error) {
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		b.ReportMetric(float64(lat[n/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(lat[n*99/100].Nanoseconds()), "p99-ns")
	}
}

// BenchmarkAppendLargeFile is BenchmarkAppend on a file that already holds
// 100,000 records: opening per operation must not get slower with size.
func BenchmarkAppendLargeFile(b *testing.B) {
	s := openTemp(b)
	ctx := context.Background()
	rec := Record{Host: "devbox-3", Tool: "send_keys", Args: benchArgs, Outcome: OutcomeOK}
	fill := make([]Record, 10_000)
	for i := range fill {
		fill[i] = rec
	}
	for range 10 {
		if err := s.Append(ctx, fill...); err != nil {
			b.Fatal(err)
		}
	}
	benchLatencies(b, func() error { return s.Append(ctx, rec) })
}
