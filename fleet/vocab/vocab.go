// Package vocab holds the words mcp, fleet and store share: the safety
// tier, the name of the local host, host patterns, the job record (job.go)
// and the audit record with its outcomes (audit.go). It imports nothing of
// fleetmux, so every package can use it.
package vocab

import "path"

// LocalHost is the reserved host name of the machine fleetmux runs on.
const LocalHost = "local"

// Tier is a safety level: readonly < mutating < destructive.
type Tier int

// The three safety tiers.
const (
	TierReadonly Tier = iota
	TierMutating
	TierDestructive
)

func (t Tier) String() string {
	switch t {
	case TierReadonly:
		return "readonly"
	case TierMutating:
		return "mutating"
	case TierDestructive:
		return "destructive"
	}
	return "unknown"
}

// ParseTier parses a tier name (exact, case-sensitive).
func ParseTier(s string) (Tier, bool) {
	switch s {
	case "readonly":
		return TierReadonly, true
	case "mutating":
		return TierMutating, true
	case "destructive":
		return TierDestructive, true
	}
	return TierReadonly, false
}

// MatchHost reports whether host matches pattern, a path.Match glob
// (`*`, `?`, `[...]`); a malformed pattern matches nothing.
func MatchHost(pattern, host string) bool {
	ok, err := path.Match(pattern, host)
	return ok && err == nil
}

// ValidPattern reports a malformed host pattern.
func ValidPattern(pattern string) error {
	_, err := path.Match(pattern, "")
	return err
}

// IsPattern reports whether s holds glob metacharacters.
func IsPattern(s string) bool {
	for _, r := range s {
		switch r {
		case '*', '?', '[':
			return true
		}
	}
	return false
}
