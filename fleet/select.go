package fleet

import (
	"fmt"
	"strings"

	"github.com/fleetmux/fleetmux/fleet/vocab"
)

// Selection is the set of hosts enabled with --hosts / FLEETMUX_HOSTS:
// comma-separated path.Match globs over aliases; a pattern starting with
// "!" excludes, and an exclusion wins wherever it appears. The zero value
// selects nothing.
type Selection struct {
	raw     string
	include []string
	exclude []string
}

// ParseSelection parses a comma-separated list of glob patterns such as
// "dev*,build-?,!dev-old". Blanks around patterns and empty entries are
// ignored; an empty string selects nothing. A malformed glob, a bare "!",
// or a list with exclusions but no inclusion is an error (write
// "*,!prod-*" to mean "everything but prod").
func ParseSelection(patterns string) (Selection, error) {
	sel := Selection{raw: strings.TrimSpace(patterns)}
	for _, p := range strings.Split(patterns, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		neg := strings.HasPrefix(p, "!")
		if neg {
			p = strings.TrimSpace(p[1:])
			if p == "" {
				return Selection{}, fmt.Errorf("%w %q: \"!\" must be followed by a pattern", ErrBadSelection, patterns)
			}
		}
		if err := vocab.ValidPattern(p); err != nil {
			return Selection{}, fmt.Errorf("%w %q: pattern %q: %w", ErrBadSelection, patterns, p, err)
		}
		if neg {
			sel.exclude = append(sel.exclude, p)
		} else {
			sel.include = append(sel.include, p)
		}
	}
	if len(sel.include) == 0 && len(sel.exclude) > 0 {
		return Selection{}, fmt.Errorf("%w %q: only exclusions, so nothing would be selected; add an inclusion such as \"*,%s\"", ErrBadSelection, patterns, sel.raw)
	}
	return sel, nil
}

// Match reports whether alias is selected. LocalHost is never matched:
// it is not an ssh_config host.
func (s Selection) Match(alias string) bool {
	if alias == LocalHost {
		return false
	}
	for _, p := range s.exclude {
		if vocab.MatchHost(p, alias) {
			return false
		}
	}
	for _, p := range s.include {
		if vocab.MatchHost(p, alias) {
			return true
		}
	}
	return false
}

// Empty reports whether the selection enables no host at all.
func (s Selection) Empty() bool { return len(s.include) == 0 }

// String returns the selection as it was given (trimmed).
func (s Selection) String() string { return s.raw }

// HostSafety holds the --host-safety caps in the order given.
type HostSafety struct {
	rules []safetyRule
}

type safetyRule struct {
	pattern string
	tier    vocab.Tier
}

// ParseHostSafety parses --host-safety values. Each spec is PATTERN=TIER
// (several may be joined with commas), PATTERN a path.Match glob over
// aliases (LocalHost included) and TIER one of readonly, mutating or
// destructive (case-insensitive).
func ParseHostSafety(specs []string) (HostSafety, error) {
	var h HostSafety
	for _, spec := range specs {
		for _, one := range strings.Split(spec, ",") {
			one = strings.TrimSpace(one)
			if one == "" {
				continue
			}
			i := strings.LastIndexByte(one, '=')
			if i < 0 {
				return HostSafety{}, fmt.Errorf("%w %q: want PATTERN=TIER, for example 'prod-*=readonly'", ErrBadHostSafety, one)
			}
			pat := strings.TrimSpace(one[:i])
			tier, tierOK := vocab.ParseTier(strings.ToLower(strings.TrimSpace(one[i+1:])))
			if pat == "" {
				return HostSafety{}, fmt.Errorf("%w %q: empty host pattern", ErrBadHostSafety, one)
			}
			if err := vocab.ValidPattern(pat); err != nil {
				return HostSafety{}, fmt.Errorf("%w %q: pattern %q: %w", ErrBadHostSafety, one, pat, err)
			}
			if !tierOK {
				return HostSafety{}, fmt.Errorf("%w %q: tier %q is not one of readonly, mutating, destructive", ErrBadHostSafety, one, one[i+1:])
			}
			h.rules = append(h.rules, safetyRule{pattern: pat, tier: tier})
		}
	}
	return h, nil
}

// Cap returns the tier cap of alias: the LOWEST tier of every rule whose
// pattern matches, so a rule can only ever restrict a host further (the
// order of the rules does not matter); ok is false when none matches.
func (h HostSafety) Cap(alias string) (tier vocab.Tier, ok bool) {
	for _, r := range h.rules {
		if vocab.MatchHost(r.pattern, alias) {
			if !ok || r.tier < tier {
				tier = r.tier
			}
			ok = true
		}
	}
	return tier, ok
}

// Shadowed returns a warning for every rule that changes no host's cap
// among aliases (the hosts it could apply to): every host it matches is
// capped lower (or as low) by another rule. A rule matching no alias at
// all is reported too.
func (h HostSafety) Shadowed(aliases []string) []string {
	var out []string
	for i, r := range h.rules {
		matched, effective := false, false
		for _, a := range aliases {
			if !vocab.MatchHost(r.pattern, a) {
				continue
			}
			matched = true
			if c, _ := h.Cap(a); c == r.tier && !h.lowerBefore(i, a) {
				effective = true
			}
		}
		switch {
		case !matched:
			out = append(out, fmt.Sprintf("--host-safety %s=%s matches no selected host", r.pattern, r.tier))
		case !effective:
			out = append(out, fmt.Sprintf("--host-safety %s=%s has no effect: every host it matches is capped as low or lower by another rule (the lowest matching tier wins)", r.pattern, r.tier))
		}
	}
	return out
}

// lowerBefore reports whether a rule other than rules[i] caps alias as low
// as rules[i] does and comes first (so of two equal rules only the first
// counts as effective).
func (h HostSafety) lowerBefore(i int, alias string) bool {
	for j, r := range h.rules {
		if j == i {
			continue
		}
		if vocab.MatchHost(r.pattern, alias) {
			if r.tier < h.rules[i].tier || (r.tier == h.rules[i].tier && j < i) {
				return true
			}
		}
	}
	return false
}
