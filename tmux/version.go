package tmux

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/fleetmux/fleetmux/transport"
)

// MinVersion is the oldest tmux fleetmux supports: fleetmux refuses to
// serve with an older one, doctor and hosts warn.
const MinVersion = "3.2a"

// VersionError is a `tmux -V` that exited with a non-zero status.
type VersionError struct {
	ExitCode int
	Stderr   string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("tmux -V: exit %d: %s", e.ExitCode, strings.TrimSpace(e.Stderr))
}

// ProbeVersion runs `bin -V` through r (bin "" is tmux on the runner's
// PATH) and returns the version it prints (ParseVersion). A run that
// fails is the runner's error; a non-zero exit is a *VersionError.
func ProbeVersion(ctx context.Context, r transport.Runner, bin string) (string, error) {
	if bin == "" {
		bin = "tmux"
	}
	res, err := r.Run(ctx, []string{bin, "-V"}, nil)
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", &VersionError{ExitCode: res.ExitCode, Stderr: string(res.Stderr)}
	}
	return ParseVersion(res.Stdout), nil
}

// VersionAtLeast compares a version as ParseVersion returns it ("3.3a",
// "next-3.4") with min in the same form: the letter counts as a third
// number (a=1). A version of another form (master, a build's hash) counts
// as new enough.
func VersionAtLeast(v, min string) bool {
	got, ok := versionParts(v)
	want, wok := versionParts(min)
	if !ok || !wok {
		return true
	}
	for i := range got {
		if got[i] != want[i] {
			return got[i] > want[i]
		}
	}
	return true
}

// versionParts splits "3.2a" into {3, 2, 1}.
func versionParts(v string) ([3]int, bool) {
	v = strings.TrimPrefix(v, "next-")
	var p [3]int
	num := strings.TrimRightFunc(v, func(r rune) bool { return r >= 'a' && r <= 'z' })
	if letters := v[len(num):]; len(letters) == 1 {
		p[2] = int(letters[0]-'a') + 1
	}
	major, minor, _ := strings.Cut(num, ".")
	var err1, err2 error
	p[0], err1 = strconv.Atoi(major)
	p[1], err2 = strconv.Atoi(minor)
	return p, err1 == nil && err2 == nil
}
