package ttyinput

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// termModes reads the canonical and echo flags of terminal tty (1 on, 0
// off, -1 where it cannot be read). The terminal is opened without
// becoming this process's controlling terminal and without blocking.
func termModes(tty string) (canon, echo int) {
	fd, err := unix.Open(tty, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1
	}
	defer unix.Close(fd)
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return -1, -1
	}
	return onOff(t.Lflag&unix.ICANON != 0), onOff(t.Lflag&unix.ECHO != 0)
}

func onOff(b bool) int {
	if b {
		return 1
	}
	return 0
}

// devNumber is fi's device number (a character device's rdev) encoded as
// /proc/PID/stat's tty_nr.
func devNumber(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Mode()&fs.ModeCharDevice == 0 {
		return 0, false
	}
	major, minor := unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev))
	return int(minor&0xff | major<<8 | (minor&^0xff)<<12), true
}

// machine is the kernel's arch (uname -m).
func machine() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Machine[:])
}
