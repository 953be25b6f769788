package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/transport"
	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// BenchmarkFanout20 compares list_sessions on one host with list_sessions
// over host "*" on 20 hosts (real sshd each), through the MCP layer. It
// reports p50 of both and their ratio; run it with -bench Fanout20.
func BenchmarkFanout20(b *testing.B) {
	env := sshtest.New(b)
	var hosts []*sshtest.Host
	for i := 0; i < 20; i++ {
		hosts = append(hosts, env.StartHost(fmt.Sprintf("fan-%02d", i), sshtest.HostOptions{}))
	}
	dir := b.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	sshtest.WriteKnownHosts(b, kh, sshtest.KnownHostsOptions{}, hosts...)
	cfgPath := filepath.Join(dir, "ssh_config")
	env.WriteSSHConfig(cfgPath, sshtest.SSHConfigOptions{KnownHostsFile: kh}, hosts...)
	cs := fleetClient20(b, cfgPath, "fan-*")
	call := func(host string) time.Duration {
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "list_sessions", Arguments: map[string]any{"host": host}})
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
		return time.Since(t0)
	}
	call("*") // connect every host
	var one, all []time.Duration
	for b.Loop() {
		one = append(one, call("fan-00"))
		all = append(all, call("*"))
	}
	p1, pa := p50(one), p50(all)
	b.ReportMetric(float64(p1.Microseconds())/1000, "one-host-p50-ms")
	b.ReportMetric(float64(pa.Microseconds())/1000, "20-hosts-p50-ms")
	b.ReportMetric(float64(pa)/float64(p1), "ratio")
}

// BenchmarkIdleConnections200 opens 200 SSH connections (one runner each,
// as 200 hosts would) in this process and reports the RSS growth.
func BenchmarkIdleConnections200(b *testing.B) {
	env := sshtest.New(b)
	h := env.StartHost("idle", sshtest.HostOptions{Config: []string{"MaxStartups 300", "MaxSessions 10"}})
	dir := b.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	sshtest.WriteKnownHosts(b, kh, sshtest.KnownHostsOptions{}, h)
	cfg := &transport.SSHConfig{Alias: "idle", HostName: "127.0.0.1", Port: h.Port, User: env.User, IdentityFiles: []string{env.UserKeyFile},
		IdentitiesOnly: true, IdentityAgent: "none", UserKnownHostsFiles: []string{kh}, StrictHostKeyChecking: "yes"}
	for b.Loop() {
		runtime.GC()
		before := rssMB()
		var rs []*transport.SSH
		for i := 0; i < 200; i++ {
			r := transport.NewSSH(cfg, transport.SSHOptions{})
			if _, err := r.Run(context.Background(), []string{"true"}, nil); err != nil {
				b.Fatal(err)
			}
			rs = append(rs, r)
		}
		runtime.GC()
		after := rssMB()
		b.ReportMetric(after-before, "rss-growth-MB")
		b.ReportMetric(after, "rss-MB")
		for _, r := range rs {
			r.Close()
		}
	}
}

func fleetClient20(b *testing.B, cfgPath, pattern string) *sdk.ClientSession {
	return benchFleetClient(b, cfgPath, pattern, mcp.TierReadonly)
}

// benchFleetClient serves the hosts pattern selects (no local host) at
// the given safety tier and connects an in-process MCP client to it.
func benchFleetClient(b *testing.B, cfgPath, pattern string, safety mcp.Tier) *sdk.ClientSession {
	return inprocFleet(b, cfgPath, pattern, safety)
}

func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkFanoutRunCommand compares run_command fanned out over 20 real
// sshd hosts with the same call on one of them (ratio-20-vs-1: 1 means
// the fan-out costs what one host costs). Run with -bench FanoutRunCommand
// -benchtime 1x.
func BenchmarkFanoutRunCommand(b *testing.B) {
	env := sshtest.New(b)
	var hosts []*sshtest.Host
	for i := range 20 {
		hosts = append(hosts, env.StartHost(fmt.Sprintf("fan-%02d", i+1), sshtest.HostOptions{}))
	}
	dir := b.TempDir()
	cfg, _ := env.WriteFleetFiles(dir, hosts...)
	cs := benchFleetClient(b, cfg, "fan-*", mcp.TierMutating)
	call := func(args map[string]any, name string) time.Duration {
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		d := time.Since(t0)
		if err != nil || res.IsError {
			b.Fatalf("%s %v: %v %+v", name, args, err, res)
		}
		return d
	}
	call(map[string]any{"host": "fan-*", "session_name": "b"}, "create_session")
	run := map[string]any{"session_name": "b", "command": "true", "timeout": 20}
	const n = 15
	var one, all []time.Duration
	for b.Loop() {
		for range n {
			run["host"] = "fan-01"
			one = append(one, call(run, "run_command"))
			run["host"] = "fan-*"
			all = append(all, call(run, "run_command"))
		}
	}
	b.ReportMetric(float64(p50(all))/float64(p50(one)), "ratio-20-vs-1")
	fmt.Fprintf(os.Stderr, "run_command p50: one host %.2f ms, 20 hosts %.2f ms (x%.2f)\n", ms(p50(one)), ms(p50(all)), float64(p50(all))/float64(p50(one)))
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
