package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetmux/fleetmux/fleet"
	"github.com/fleetmux/fleetmux/mcp"
	"github.com/fleetmux/fleetmux/transport/sshtest"
)

// watchFleet is one sshd reached as "w" and "w2" (direct) and "wslow"
// (through a proxy delaying each way by rtt/2), and an in-process
// fleetmux on it.
type watchFleet struct {
	host *sshtest.Host
	cs   *sdk.ClientSession
	sock string // the private tmux socket of every call
	srv  *mcp.Server
}

func startWatchFleet(tb testing.TB, rtt time.Duration, poll bool) *watchFleet {
	env := sshtest.New(tb)
	h := env.StartHost("w", sshtest.HostOptions{})
	dir := tb.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	sshtest.WriteKnownHosts(tb, kh, sshtest.KnownHostsOptions{}, h)
	_, proxyPort, _ := net.SplitHostPort(sshtest.DelayProxy(tb, h.Addr, rtt/2))
	block := func(alias, port string) string {
		return fmt.Sprintf("Host %s\n  HostName 127.0.0.1\n  Port %s\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  IdentityAgent none\n"+
			"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n  HostKeyAlias %s\n",
			alias, port, env.User, env.UserKeyFile, kh, h.KnownHostsName())
	}
	cfgPath := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(cfgPath, []byte(block("w", strconv.Itoa(h.Port))+block("w2", strconv.Itoa(h.Port))+block("wslow", proxyPort)), 0o600); err != nil {
		tb.Fatal(err)
	}
	inv, err := fleet.LoadInventory(fleet.InventoryOptions{UserConfig: cfgPath})
	if err != nil {
		tb.Fatal(err)
	}
	sel, _ := fleet.ParseSelection("w*")
	f, err := fleet.New(fleet.Options{Inventory: inv, Selection: sel})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	srv, cs := inprocServe(tb, f, mcp.Options{Settings: mcp.Settings{Safety: mcp.TierDestructive, SuppressHistory: true, WaitMax: 60}, PollWaits: poll}, "watch")
	sock := fmt.Sprintf("fleetmux-test-watche2e-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	tb.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	return &watchFleet{host: h, cs: cs, sock: sock, srv: srv}
}

func (wf *watchFleet) call(tb testing.TB, tool string, args map[string]any) (map[string]any, string, bool) {
	tb.Helper()
	if args["host"] == "local" {
		args["socket_name"] = wf.sock
	}
	res, err := wf.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		tb.Fatalf("%s: %v", tool, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			text = tc.Text
		}
	}
	var m map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &m)
	return m, text, res.IsError
}

// session creates a session on host (and on local) and returns its pane.
func (wf *watchFleet) session(tb testing.TB, host string) string {
	tb.Helper()
	name := fmt.Sprintf("watch%d", time.Now().UnixNano()%1e9)
	if host == "local" {
		// bash without rc files: the machine's rc files are slow.
		out, err := exec.Command("tmux", "-L", wf.sock, "-f", "/dev/null", "new-session", "-d", "-s", name, "-P", "-F", "#{pane_id}", "bash --norc --noprofile").Output()
		if err != nil {
			tb.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	m, text, isErr := wf.call(tb, "create_session", map[string]any{"host": host, "session_name": name})
	if isErr {
		tb.Fatalf("create_session on %s: %s", host, text)
	}
	pane, _ := m["active_pane_id"].(string)
	tb.Cleanup(func() {
		wf.call(tb, "kill_session", map[string]any{"host": host, "session_name": name})
	})
	return pane
}

// TestWaitWatchedEndToEnd: wait_for_text ends on output locally and on
// an SSH host (watched there), list_hosts says the host waits by
// watching, and a wait during which the connection drops still ends
// with the output (it polls for the rest of its time).
func TestWaitWatchedEndToEnd(t *testing.T) {
	wf := startWatchFleet(t, 0, false)
	for _, host := range []string{"local", "w"} {
		t.Run(host, func(t *testing.T) {
			pane := wf.session(t, host)
			go func() {
				time.Sleep(300 * time.Millisecond)
				wf.call(t, "send_keys", map[string]any{"host": host, "pane_id": pane, "keys": "echo wat''ched-" + host})
			}()
			m, text, isErr := wf.call(t, "wait_for_text", map[string]any{"host": host, "pane_id": pane, "patterns": []any{"watched-" + host}, "timeout": 20})
			if isErr || m["outcome"] != "matched" {
				t.Fatalf("wait_for_text on %s: %v %s", host, m, text)
			}
		})
	}
	_, text, _ := wf.call(t, "list_hosts", map[string]any{})
	if !strings.Contains(text, `"wait":"watch"`) && !strings.Contains(text, `"wait": "watch"`) {
		t.Errorf("list_hosts does not say host w waits by watching: %s", text)
	}

	// The connection drops while the wait runs.
	pane := wf.session(t, "w")
	go func() {
		time.Sleep(500 * time.Millisecond)
		wf.host.DropConnections()
		time.Sleep(500 * time.Millisecond)
		wf.call(t, "send_keys", map[string]any{"host": "w", "pane_id": pane, "keys": "echo after''-drop"})
	}()
	m, text, isErr := wf.call(t, "wait_for_text", map[string]any{"host": "w", "pane_id": pane, "patterns": []any{"after-drop"}, "timeout": 30})
	if isErr {
		// A clear error naming the connection is acceptable too.
		if !strings.Contains(strings.ToLower(text), "connection") {
			t.Fatalf("wait across a dropped connection failed unclearly: %s", text)
		}
		return
	}
	if m["outcome"] != "matched" {
		t.Fatalf("wait across a dropped connection: %v", m)
	}
}

// TestWaitFanOutWatched: a wait_for_text fanned out over three hosts
// ends on each when the text appears, and each host's wait ran on its
// watcher (list_hosts says watch for all three).
func TestWaitFanOutWatched(t *testing.T) {
	wf := startWatchFleet(t, 0, false)
	name := fmt.Sprintf("fan%d", time.Now().UnixNano()%1e9)
	m, text, isErr := wf.call(t, "create_session", map[string]any{"host": "w", "session_name": name})
	if isErr {
		t.Fatalf("create_session: %s", text)
	}
	t.Cleanup(func() { wf.call(t, "kill_session", map[string]any{"host": "w", "session_name": name}) })
	pane, _ := m["active_pane_id"].(string)
	// The hosts' waits enter at different moments (each connection is
	// dialled by the fan-out): the text is printed again until the call
	// returns, so each wait sees it after its entry.
	stop := make(chan struct{})
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for {
			select {
			case <-stop:
				return
			case <-time.After(700 * time.Millisecond):
			}
			wf.call(t, "send_keys", map[string]any{"host": "w", "pane_id": pane, "keys": "echo fan''ned"})
		}
	}()
	res, err := wf.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "wait_for_text",
		Arguments: map[string]any{"host": []any{"w", "w2", "wslow"}, "session_name": name, "patterns": []any{"fanned"}, "timeout": 20}})
	if err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-printed
	raw, _ := json.Marshal(res)
	if res.IsError || strings.Count(string(raw), `"outcome":"matched"`) != 3 {
		t.Fatalf("fan-out wait: %s", raw)
	}
	_, text, _ = wf.call(t, "list_hosts", map[string]any{})
	var hosts []struct {
		Host string  `json:"host"`
		Wait *string `json:"wait"`
	}
	if err := json.Unmarshal([]byte(text), &hosts); err != nil {
		t.Fatalf("list_hosts: %v: %s", err, text)
	}
	watched := map[string]string{}
	for _, h := range hosts {
		if h.Wait != nil {
			watched[h.Host] = *h.Wait
		}
	}
	for _, h := range []string{"w", "w2", "wslow"} {
		if watched[h] != "watch" {
			t.Errorf("host %s waited by %q, want watch (%s)", h, watched[h], text)
		}
	}
}

// cpuOf is the user+system CPU time of pids (Linux /proc), and of this
// process.
func cpuOf(pids []int) time.Duration {
	var total time.Duration
	tick := 100 // USER_HZ on Linux
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 15 {
			continue
		}
		u, _ := strconv.Atoi(f[11])
		st, _ := strconv.Atoi(f[12])
		cu, _ := strconv.Atoi(f[13])
		cs, _ := strconv.Atoi(f[14])
		total += time.Duration(u+st+cu+cs) * time.Second / time.Duration(tick)
	}
	return total
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWaitCPU prints CPU per waiting second on silent panes, host
// side (sshd and everything it started, and the tmux servers) and
// fleetmux side, for 1 and 20 concurrent waits locally, on one SSH host
// and spread over three, with the watcher and with polling (the
// baseline): over the whole wait (its fixed start and end included) and
// in its steady middle (from 1 s to 4 s of a 5 s wait). Then the
// reaction of a wait over a 40 ms RTT link, from the moment the pane's
// command printed (its own timestamp, same clock) to the wait's return.
// Run with -bench WaitCPU -benchtime 1x.
func BenchmarkWaitCPU(b *testing.B) {
	const waitSecs = 5
	for b.Loop() {
		for _, poll := range []bool{true, false} {
			wf := startWatchFleet(b, 40*time.Millisecond, poll)
			mode := "watch"
			if poll {
				mode = "poll"
			}
			for _, sc := range []struct {
				label string
				hosts []string
				n     int
			}{
				{"local", []string{"local"}, 1}, {"local", []string{"local"}, 20},
				{"w", []string{"w"}, 1}, {"w", []string{"w"}, 20},
				{"3 hosts", []string{"w", "w2", "wslow"}, 20},
			} {
				type target struct{ host, pane string }
				var targets []target
				for i := range sc.n {
					h := sc.hosts[i%len(sc.hosts)]
					targets = append(targets, target{h, wf.session(b, h)})
				}
				hostPids := func() []int {
					return append([]int{wf.host.PID()}, sshtest.Descendants(wf.host.PID())...)
				}
				var tmuxPids []int
				for _, h := range []string{"local", "w"} {
					_, txt, _ := wf.call(b, "display_message", map[string]any{"host": h, "format_string": "#{pid}"})
					if pid, err := strconv.Atoi(strings.TrimSpace(txt)); err == nil {
						tmuxPids = append(tmuxPids, pid)
					}
				}
				time.Sleep(time.Second) // the shells start
				type snap struct{ host, tmux, self time.Duration }
				take := func() snap { return snap{cpuOf(hostPids()), cpuOf(tmuxPids), selfCPU()} }
				s0 := take()
				start := time.Now()
				done := make(chan struct{}, sc.n)
				for _, tg := range targets {
					go func() {
						wf.call(b, "wait_for_text", map[string]any{"host": tg.host, "pane_id": tg.pane, "patterns": []any{"never-printed-xyz"}, "timeout": waitSecs})
						done <- struct{}{}
					}()
				}
				time.Sleep(time.Second)
				m0, mt0 := take(), time.Now()
				time.Sleep(3 * time.Second)
				m1, mt1 := take(), time.Now()
				for range sc.n {
					<-done
				}
				el := time.Since(start).Seconds()
				s1 := take()
				pct := func(a, z snap, secs float64) (float64, float64) {
					return (z.host - a.host + z.tmux - a.tmux).Seconds() / secs * 100, (z.self - a.self).Seconds() / secs * 100
				}
				wh, wfm := pct(s0, s1, el)
				mh, mfm := pct(m0, m1, mt1.Sub(mt0).Seconds())
				fmt.Fprintf(os.Stderr, "%-5s %-7s %2d waits: whole wait: host side %6.2f%% + fleetmux %6.2f%% = %6.2f%%; steady: host side %5.2f%% + fleetmux %5.2f%% = %5.2f%% of a core\n",
					mode, sc.label, sc.n, wh, wfm, wh+wfm, mh, mfm, mh+mfm)
			}
			// Reaction over a 40 ms RTT link: the pane prints a word and
			// the host's clock; the wait runs over the slow alias.
			pane := wf.session(b, "wslow")
			var reacts []time.Duration
			for i := range 7 {
				word := fmt.Sprintf("react%d", i)
				go func() {
					// Typed over the fast alias into the same tmux server.
					wf.call(b, "send_keys", map[string]any{"host": "w", "pane_id": pane, "keys": "sleep 0.6; echo " + word[:3] + "''" + word[3:] + " $(date +%s%N)"})
				}()
				m, _, _ := wf.call(b, "wait_for_text", map[string]any{"host": "wslow", "pane_id": pane, "patterns": []any{word + ` \d+`}, "regex": true, "timeout": 10})
				end := time.Now()
				lines, _ := m["matched_lines"].([]any)
				if len(lines) == 0 {
					continue
				}
				f := strings.Fields(fmt.Sprint(lines[0]))
				ns, err := strconv.ParseInt(f[len(f)-1], 10, 64)
				if err != nil {
					continue
				}
				reacts = append(reacts, end.Sub(time.Unix(0, ns)))
			}
			if len(reacts) > 0 {
				fmt.Fprintf(os.Stderr, "%-5s reaction at 40 ms RTT (from the pane's print): p50 %.1f ms (%v)\n", mode, ms(p50(reacts)), reacts)
			}
		}
	}
}

// TestWaitWatchedDeadline: at its deadline a watched wait looks once
// more, through the watcher, and answers as a polling wait does: a
// silent pane times out, and a pane killed during the wait (which
// prints nothing) is reported gone. Locally and on an SSH host, watched
// and polling.
func TestWaitWatchedDeadline(t *testing.T) {
	type answer struct {
		outcome any
		isErr   bool
		text    string
	}
	got := map[bool]map[string][2]answer{}
	for _, poll := range []bool{true, false} {
		wf := startWatchFleet(t, 0, poll)
		got[poll] = map[string][2]answer{}
		for _, host := range []string{"local", "w"} {
			var a [2]answer
			pane := wf.session(t, host)
			m, text, isErr := wf.call(t, "wait_for_text", map[string]any{"host": host, "pane_id": pane, "patterns": []any{"never-printed-xyz"}, "timeout": 1})
			a[0] = answer{m["outcome"], isErr, text}
			// A second pane, killed while a wait on it runs.
			m, text, isErr = wf.call(t, "split_window", map[string]any{"host": host, "pane_id": pane})
			if isErr {
				t.Fatalf("split_window on %s: %s", host, text)
			}
			victim, _ := m["pane_id"].(string)
			go func() {
				time.Sleep(400 * time.Millisecond)
				wf.call(t, "kill_pane", map[string]any{"host": host, "pane_id": victim})
			}()
			m, text, isErr = wf.call(t, "wait_for_text", map[string]any{"host": host, "pane_id": victim, "patterns": []any{"never-printed-xyz"}, "timeout": 1.5})
			a[1] = answer{m["outcome"], isErr, text}
			got[poll][host] = a
		}
	}
	for _, host := range []string{"local", "w"} {
		p, w := got[true][host], got[false][host]
		if w[0].isErr || w[0].outcome != "timeout" {
			t.Errorf("%s: a watched wait on a silent pane: %+v, want outcome timeout", host, w[0])
		}
		if !w[1].isErr || w[1].isErr != p[1].isErr || w[1].text != p[1].text {
			t.Errorf("%s: a wait on a killed pane: watched %+v, polling %+v; want the same error", host, w[1], p[1])
		}
	}
}
