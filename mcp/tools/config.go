package tools

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/fleetmux/fleetmux/fleet/vocab"

	"github.com/fleetmux/fleetmux/mcp/pyfmt"
)

// Tier is the safety tier (fleet/vocab).
type Tier = vocab.Tier

// ErrHistoryEnv is the fatal start-up error for a bad
// LIBTMUX_SUPPRESS_HISTORY (the value itself is never printed).
var ErrHistoryEnv = errors.New("LIBTMUX_SUPPRESS_HISTORY must be unset, '0', or '1'")

// Settings are the start-up values read from the environment.
type Settings struct {
	Safety          Tier
	SuppressHistory bool
	WaitMax         float64
	PromptsAsTools  bool
	Warnings        []string // to log at WARNING
}

// SettingsFromEnv resolves the reference's start-up variables in its order.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var s Settings
	raw, set := lookup(getenv, "LIBTMUX_SAFETY")
	if !set {
		s.Safety = vocab.TierMutating
	} else if t, ok := vocab.ParseTier(raw); ok {
		s.Safety = t
	} else {
		s.Safety = vocab.TierReadonly
		s.Warnings = append(s.Warnings, fmt.Sprintf("invalid LIBTMUX_SAFETY=%s, falling back to readonly", pyfmt.Repr(raw)))
	}
	switch h, set := lookup(getenv, "LIBTMUX_SUPPRESS_HISTORY"); {
	case !set || h == "1":
		s.SuppressHistory = true
	case h == "0":
		s.SuppressHistory = false
	default:
		return s, ErrHistoryEnv
	}
	var w string
	s.WaitMax, w = parseWaitMax(getenv)
	if w != "" {
		s.Warnings = append(s.Warnings, w)
	}
	s.PromptsAsTools = getenv("LIBTMUX_MCP_PROMPTS_AS_TOOLS") == "1"
	return s, nil
}

// lookup treats an empty value of an unset-able variable as set; getenv
// cannot tell unset from empty, so os.LookupEnv is consulted when getenv
// is os.Getenv's stand-in.
func lookup(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	if v != "" {
		return v, true
	}
	if envLookup != nil {
		return envLookup(name)
	}
	return "", false
}

// envLookup distinguishes unset from empty; tests may replace it.
var envLookup = os.LookupEnv

// Wait ceiling bounds.
const (
	waitMaxDefault = 30.0
	waitMaxFloor   = 1.0
	waitMaxLimit   = 120.0
)

func parseWaitMax(getenv func(string) string) (float64, string) {
	raw, set := lookup(getenv, "LIBTMUX_MCP_WAIT_MAX_SECONDS")
	if !set {
		return waitMaxDefault, ""
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return waitMaxDefault, fmt.Sprintf("invalid LIBTMUX_MCP_WAIT_MAX_SECONDS=%s; using %s", pyfmt.Repr(raw), pyfmt.Float(waitMaxDefault))
	}
	c := math.Min(math.Max(f, waitMaxFloor), waitMaxLimit)
	if c != f {
		return c, fmt.Sprintf("LIBTMUX_MCP_WAIT_MAX_SECONDS=%s clamped to %s", pyfmt.Repr(raw), pyfmt.Float(c))
	}
	return c, ""
}
