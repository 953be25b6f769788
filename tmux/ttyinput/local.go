package ttyinput

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// The local probe: on this machine the pane's processes and terminal are
// read here, with the same bounds and the same fields as the script of
// tmux.InputProbe, from the pane's process, terminal and screen that the
// request printed. Nothing is started: a probe is a few dozen reads of
// /proc files and one ioctl on the terminal.

// Bounds of the local probe, the script's (tmux/inputprobe.go).
const (
	localMembers = 8   // members of the foreground group looked at
	localFDs     = 256 // descriptors of each
	localTree    = 64  // processes of the pane's tree walked
	localTFDs    = 64  // epoll interest list entries
	procMax      = 4 << 10
	fdinfoMax    = 64 << 10
)

// shellNames are the command names of shells (tmux's shellNames pattern).
var shellNames = map[string]bool{}

func init() {
	for _, n := range []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh"} {
		shellNames[n], shellNames["-"+n] = true, true
	}
}

// readProc reads at most max bytes of a /proc file.
func readProc(path string, max int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max))
	return string(b), err
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// procStat is what a /proc/PID/stat line says after the name.
type procStat struct {
	state              string
	pgrp, ttyNr, tpgid int
}

func readStat(pid int) (procStat, error) {
	l, err := readProc("/proc/"+strconv.Itoa(pid)+"/stat", procMax)
	if err != nil {
		return procStat{}, err
	}
	i := strings.LastIndexByte(l, ')')
	if i < 0 {
		return procStat{}, errors.New("stat: no name")
	}
	f := strings.Fields(l[i+1:])
	if len(f) < 6 {
		return procStat{}, errors.New("stat: short line")
	}
	var st procStat
	var e1, e2, e3 error
	st.state = f[0]
	st.pgrp, e1 = strconv.Atoi(f[2])
	st.ttyNr, e2 = strconv.Atoi(f[4])
	st.tpgid, e3 = strconv.Atoi(f[5])
	if err := errors.Join(e1, e2, e3); err != nil {
		return procStat{}, fmt.Errorf("stat: %w", err)
	}
	return st, nil
}

// sampleLocal reads the sample of pane from the line of localFormat.
func sampleLocal(ctx context.Context, pane, line string) (sample, error) {
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != pane || f[1] != "0" {
		return sample{none: true}, nil
	}
	pid, err := strconv.Atoi(f[2])
	if err != nil || pid <= 0 {
		return sample{none: true}, nil
	}
	tty := f[3]
	lead, err := readStat(pid)
	if err != nil {
		return sample{none: true}, nil
	}
	ttyInfo, err := os.Stat(tty)
	if err != nil {
		return sample{none: true}, nil
	}
	if dev, ok := devNumber(ttyInfo); !ok || dev != lead.ttyNr {
		// The pane's process is not on the pane's terminal: not this
		// machine's pane (or its process was replaced).
		return sample{none: true}, nil
	}
	s := sample{arch: machine(), alternate: f[4] == "1", panePID: pid, group: lead.tpgid}
	s.canon, s.echo = termModes(tty)
	if s.group <= 0 {
		return s, nil
	}
	devTTY, _ := os.Stat("/dev/tty")
	isTTY := func(fi fs.FileInfo) bool {
		return os.SameFile(fi, ttyInfo) || (devTTY != nil && os.SameFile(fi, devTTY))
	}
	seen := map[int]bool{}
	for _, q := range members(pid, s.group) {
		if err := ctx.Err(); err != nil {
			return sample{}, fmt.Errorf("ttyinput: local probe: %w", err)
		}
		if seen[q] {
			continue
		}
		seen[q] = true
		if len(s.procs) >= localMembers {
			break
		}
		st, err := readStat(q)
		if err != nil || st.pgrp != s.group {
			continue
		}
		s.procs = append(s.procs, readMember(q, st, isTTY))
	}
	return s, nil
}

// members are the candidates for the group's members: its leader first,
// then the pane's tree breadth first from its process, or all of /proc
// where the kernel has no children files. The caller keeps those of the
// group.
func members(pid, group int) []int {
	m := []int{group}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err != nil {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return m
		}
		for _, e := range ents {
			if q, err := strconv.Atoi(e.Name()); err == nil {
				if st, err := readStat(q); err == nil && st.pgrp == group {
					m = append(m, q)
				}
			}
		}
		return m
	}
	queue := []int{pid}
	for k := 0; len(queue) > 0 && k < localTree; k++ {
		x := queue[0]
		queue = queue[1:]
		m = append(m, x)
		dir := "/proc/" + strconv.Itoa(x) + "/task"
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, t := range tasks {
			c, err := readProc(dir+"/"+t.Name()+"/children", procMax)
			if err != nil {
				continue
			}
			for _, w := range strings.Fields(c) {
				if n, err := strconv.Atoi(w); err == nil {
					queue = append(queue, n)
				}
			}
		}
	}
	return m
}

// readMember reads one member of the group as the script does.
func readMember(q int, st procStat, isTTY func(fs.FileInfo) bool) proc {
	dir := "/proc/" + strconv.Itoa(q)
	p := proc{pid: q, state: st.state, syscall: []string{"-"}, wchan: "-", arg0: "-"}
	if c, err := readProc(dir+"/comm", procMax); err == nil {
		p.shell = shellNames[firstLine(c)]
	}
	var a0 string
	if y, err := readProc(dir+"/syscall", procMax); err == nil {
		if f := strings.Fields(firstLine(y)); len(f) > 0 {
			p.syscall = f
			if len(f) > 1 {
				a0 = f[1]
			}
		}
	}
	if w, err := readProc(dir+"/wchan", procMax); err == nil && firstLine(w) != "" {
		p.wchan = strings.Join(strings.Fields(firstLine(w)), "_")
	}
	fdDir := dir + "/fd/"
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return p
	}
	for i, e := range ents {
		if i >= localFDs {
			break
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fi, err := os.Stat(fdDir + e.Name())
		if err != nil {
			continue
		}
		switch {
		case isTTY(fi):
			p.ttyFDs = append(p.ttyFDs, fd)
		case fi.Mode()&fs.ModeSocket != 0:
			p.sockFDs = append(p.sockFDs, fd)
		}
	}
	if !strings.HasPrefix(a0, "0x") {
		return p
	}
	v, err := strconv.ParseInt(a0[2:], 16, 64)
	if err != nil || v >= 65536 {
		return p
	}
	fi, err := os.Stat(fdDir + strconv.FormatInt(v, 10))
	if err != nil {
		return p
	}
	switch {
	case isTTY(fi):
		p.arg0 = "tty"
	case fi.Mode()&fs.ModeSocket != 0:
		p.arg0 = "sock"
	case fi.Mode()&fs.ModeNamedPipe != 0:
		p.arg0 = "pipe"
	default:
		p.arg0 = "other"
		info, err := readProc(dir+"/fdinfo/"+strconv.FormatInt(v, 10), fdinfoMax)
		if err != nil {
			return p
		}
		j := 0
		for _, l := range strings.Split(info, "\n") {
			f := strings.Fields(l)
			if len(f) < 2 || f[0] != "tfd:" {
				continue
			}
			if j++; j > localTFDs {
				break
			}
			if _, err := strconv.Atoi(f[1]); err != nil {
				continue
			}
			ti, err := os.Stat(fdDir + f[1])
			if err != nil {
				continue
			}
			if isTTY(ti) {
				p.epTTY = true
			} else if ti.Mode()&fs.ModeSocket != 0 {
				p.epSock = true
			}
		}
	}
	return p
}

// String writes s as the script's line.
func (s sample) String() string {
	if s.none {
		return "fleetmux-input 1 none"
	}
	var b strings.Builder
	arch := s.arch
	if arch == "" {
		arch = "-"
	}
	alt := "0"
	if s.alternate {
		alt = "1"
	}
	fmt.Fprintf(&b, "fleetmux-input 1 %s %s %s %s %d %d", arch, alt, modeString(s.canon), modeString(s.echo), s.panePID, s.group)
	for _, p := range s.procs {
		sh := "0"
		if p.shell {
			sh = "1"
		}
		fmt.Fprintf(&b, " @ %d %s %s %s %s %s %s %s %s %s", p.pid, p.state, sh, strings.Join(p.syscall, ","), p.wchan,
			intList(p.ttyFDs), intList(p.sockFDs), p.arg0, bit(p.epTTY), bit(p.epSock))
	}
	return b.String()
}

func modeString(m int) string {
	switch m {
	case 1:
		return "1"
	case 0:
		return "0"
	case notAsked:
		return "x"
	}
	return "-"
}

func intList(l []int) string {
	if len(l) == 0 {
		return "-"
	}
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func bit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
