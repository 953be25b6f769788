// Package age reads the ages fleetmux accepts wherever a user says "how
// long ago" or "how old": a Go duration with an optional leading whole
// number of days ("90m", "36h", "7d", "1d12h"). list_jobs' since, fleetmux
// audit --since/--until and --audit-retention all read them here, so the
// three accept the same text.
package age

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxDays bounds the days part, so that no age overflows a time.Duration
// (about 292 years).
const MaxDays = 100000

// ErrNegative reports an age below zero ("-1h").
var ErrNegative = errors.New("negative duration")

// Parse reads an age. ok reports that s looks like an age at all (a number
// of days, or a duration whose unit parses): a caller that also accepts
// points in time tries those when ok is false. err, with ok true, says what
// is wrong with an age: a bad duration after the days, a negative part, or
// more than MaxDays days. The empty string is not an age.
func Parse(s string) (d time.Duration, ok bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	rest := s
	if i := strings.IndexByte(s, 'd'); i > 0 {
		days, err := strconv.Atoi(s[:i])
		if err != nil {
			return 0, false, nil
		}
		if days < 0 {
			return 0, true, fmt.Errorf("%w %q", ErrNegative, s)
		}
		if days > MaxDays {
			return 0, true, fmt.Errorf("duration %q: more than %d days", s, MaxDays)
		}
		d = time.Duration(days) * 24 * time.Hour
		rest = s[i+1:]
	}
	if rest != "" {
		more, err := time.ParseDuration(rest)
		if err != nil && rest == s {
			return 0, false, nil
		}
		if err != nil {
			return 0, true, fmt.Errorf("bad duration %q", s)
		}
		if more < 0 {
			return 0, true, fmt.Errorf("%w %q", ErrNegative, s)
		}
		d += more
	}
	return d, true, nil
}
