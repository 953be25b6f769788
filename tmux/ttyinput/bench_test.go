package ttyinput

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkProbe reports one probe's wall time and the CPU it costs on
// the pane's host, locally: the tmux server with its reaped children
// (the script and the programs it starts), read from the server's
// /proc/PID/stat, plus this process's own CPU (the Go reader). Panes:
// a sleep (busy, no stty) and a script's read (a prompt, stty asked);
// modes: go (the local probe) and script (the remote one, run here).
func BenchmarkProbe(b *testing.B) {
	for _, pc := range []struct{ name, cmd string }{
		{"sleep", "sleep 1000"},
		{"read", "bash --norc --noprofile -c 'read -p ok? x'"},
	} {
		for _, local := range []bool{true, false} {
			b.Run(pc.name+"/"+map[bool]string{true: "go", false: "script"}[local], func(b *testing.B) {
				benchProbe(b, pc.cmd, local)
			})
		}
	}
}

func benchProbe(b *testing.B, cmd string, local bool) {
	// localServerB's executor is the one fleetmux uses locally: tmux's
	// protocol spoken here, no tmux client started per request (where
	// the binary allows).
	srv := localServerB(b)
	ctx := context.Background()
	out, err := srv.Cmd(ctx, "new-window", "-d", "-P", "-F", "#{pane_id}", cmd)
	if err != nil {
		b.Fatal(err)
	}
	pid, err := srv.Cmd(ctx, "display-message", "-p", "#{pid}")
	if err != nil {
		b.Fatal(err)
	}
	// Let the pane settle into its read.
	for i := 0; i < 100; i++ {
		if r, _ := Probe(ctx, srv.Server, out[0], local); r.State == Line || r.State == Busy {
			break
		}
	}
	before, self := cpuTicks(b, pid[0]), cpuTicks(b, "self")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Probe(ctx, srv.Server, out[0], local)
		if err != nil || (r.State != Busy && r.State != Line) {
			b.Fatalf("%v %v", r, err)
		}
	}
	b.StopTimer()
	// USER_HZ is 100 on Linux.
	b.ReportMetric(float64(cpuTicks(b, pid[0])-before)*10/float64(b.N), "server-cpu-ms/op")
	b.ReportMetric(float64(cpuTicks(b, "self")-self)*10/float64(b.N), "self-cpu-ms/op")
}

// BenchmarkSampleLocal is the Go reader alone (no tmux request), on a
// pane whose program reads the terminal.
func BenchmarkSampleLocal(b *testing.B) {
	srv := localServerB(b)
	ctx := context.Background()
	out, err := srv.Cmd(ctx, "new-window", "-d", "-P", "-F", "#{pane_id}", "bash --norc --noprofile -c 'read -p ok? x'")
	if err != nil {
		b.Fatal(err)
	}
	line, err := srv.Cmd(ctx, "display-message", "-p", "-t", out[0], localFormat)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := sampleLocal(ctx, out[0], line[0])
		if err != nil || len(s.procs) == 0 {
			b.Fatalf("%v %v", s, err)
		}
	}
}

// cpuTicks is pid's utime+stime+cutime+cstime.
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
