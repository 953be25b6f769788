package ttyinput

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkProbe reports one probe's wall time and the CPU it costs on
// the pane's host (the tmux server, the script and the programs it
// starts, read from the server's /proc/PID/stat with its reaped
// children), locally, on a pane whose shell runs sleep (the busy case,
// where the whole group is listed).
func BenchmarkProbe(b *testing.B) {
	srv := localServerB(b)
	ctx := context.Background()
	out, err := srv.Cmd(ctx, "new-window", "-d", "-P", "-F", "#{pane_id}", "sleep 1000")
	if err != nil {
		b.Fatal(err)
	}
	pid, err := srv.Cmd(ctx, "display-message", "-p", "#{pid}")
	if err != nil {
		b.Fatal(err)
	}
	before := cpuTicks(b, pid[0])
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Probe(ctx, srv, out[0])
		if err != nil || r.State != Busy {
			b.Fatalf("%v %v", r, err)
		}
	}
	b.StopTimer()
	// USER_HZ is 100 on Linux.
	b.ReportMetric(float64(cpuTicks(b, pid[0])-before)*10/float64(b.N), "host-cpu-ms/op")
}

func cpuTicks(b *testing.B, pid string) int {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	n := 0
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		v, _ := strconv.Atoi(f[i])
		n += v
	}
	return n
}
