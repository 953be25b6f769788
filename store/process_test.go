package store

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment of a helper child process (this test binary re-executed).
const (
	envHelper = "FLEETMUX_STORE_HELPER" // "writer" or "reader"
	envPath   = "FLEETMUX_STORE_PATH"
	envHost   = "FLEETMUX_STORE_HOST"
	envCount  = "FLEETMUX_STORE_COUNT" // records to write (writer, -1: until killed) or expect (reader)
)

// TestHelperProcess is not a test: it is the body of the child processes
// started by the multi-process tests below.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		t.Skip("helper process only")
	}
	os.Exit(helperMain(mode))
}

func helperMain(mode string) int {
	ctx := context.Background()
	n, _ := strconv.Atoi(os.Getenv(envCount))
	s, err := Open(os.Getenv(envPath), Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch mode {
	case "writer":
		host := os.Getenv(envHost)
		for i := 0; n < 0 || i < n; i++ {
			// Alternate single records and small batches.
			var recs []Record
			for j := range 1 + i%3 {
				recs = append(recs, Record{PID: os.Getpid(), Host: host, Tool: fmt.Sprintf("t%d.%d", i, j), Outcome: OutcomeOK,
					Args: json.RawMessage(`{"keys":{"len":16,"sha256_prefix":"3a8c1f0d2b9e"},"pane_id":"%1"}`)})
			}
			if err := s.Append(ctx, recs...); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Printf("committed %d\n", len(recs))
		}
	case "reader":
		deadline := time.Now().Add(15 * time.Second)
		last := 0
		for time.Now().Before(deadline) {
			recs, err := s.Query(ctx, Query{})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if len(recs) < last {
				fmt.Fprintf(os.Stderr, "record count went down: %d -> %d\n", last, len(recs))
				return 1
			}
			last = len(recs)
			fmt.Printf("read %d\n", last)
			if last >= n {
				return 0
			}
			time.Sleep(5 * time.Millisecond)
		}
		fmt.Fprintf(os.Stderr, "reader saw %d of %d records\n", last, n)
		return 1
	}
	return 0
}

func helperCmd(t *testing.T, mode, path, host string, n int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), envHelper+"="+mode, envPath+"="+path, envHost+"="+host, envCount+"="+strconv.Itoa(n))
	cmd.Stderr = &strings.Builder{}
	return cmd
}

// Two processes append while a third reads; no record is lost or doubled.
func TestTwoWritersOneReader(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	if _, err := Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	const per = 60 // Append calls per writer: 1, 2 or 3 records each
	perRecords := 0
	for i := range per {
		perRecords += 1 + i%3
	}
	cmds := []*exec.Cmd{
		helperCmd(t, "writer", path, "w1", per),
		helperCmd(t, "writer", path, "w2", per),
		helperCmd(t, "reader", path, "", 2*perRecords),
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("%v: %v: %s", c.Env[len(c.Env)-4:], err, c.Stderr)
		}
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs := mustQuery(t, s, Query{})
	seqs := map[uint64]bool{}
	perHost := map[string]map[string]bool{}
	for _, r := range recs {
		if seqs[r.Seq] {
			t.Errorf("duplicate seq %d", r.Seq)
		}
		seqs[r.Seq] = true
		if perHost[r.Host] == nil {
			perHost[r.Host] = map[string]bool{}
		}
		perHost[r.Host][r.Tool] = true
	}
	for _, h := range []string{"w1", "w2"} {
		if got := len(perHost[h]); got != perRecords {
			t.Errorf("%s: %d distinct records, want %d", h, got, perRecords)
		}
	}
	if len(recs) != 2*perRecords {
		t.Errorf("%d records, want %d", len(recs), 2*perRecords)
	}
}

// SIGKILL during a burst of appends leaves a file that opens and holds every
// record whose Append had returned.
func TestKillDuringBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	committed := 0
	for round := range 3 {
		cmd := helperCmd(t, "writer", path, fmt.Sprint("round", round), -1)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		lines := 0
		killAt := 20 + round*17
		for sc.Scan() {
			var n int
			if _, err := fmt.Sscanf(sc.Text(), "committed %d", &n); err != nil {
				t.Fatalf("child said %q", sc.Text())
			}
			committed += n
			if lines++; lines == killAt {
				// Land the signal at varying points of the next append.
				time.Sleep(time.Duration(round) * 400 * time.Microsecond)
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child not killed: %v: %s", err, cmd.Stderr)
		}

		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		recs, err := s.Query(context.Background(), Query{})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) < committed {
			t.Fatalf("round %d: %d records in the file, child reported %d committed", round, len(recs), committed)
		}
		t.Logf("round %d: child reported %d committed in total, file has %d", round, committed, len(recs))
		committed = len(recs) // an append may have committed just before the kill without being reported
	}
}
