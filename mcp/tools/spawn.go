package tools

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// spawnArgs are the environment arguments of the four spawn tools,
// embedded in their argument structs.
type spawnArgs struct {
	Environment               any
	SuppressPersistentHistory bool
}

// env prepares the NAME=VALUE environment of the four spawn tools: the
// caller's environment (object or JSON text),
// plus the history controls when suppress_persistent_history is set.
func (a spawnArgs) env() ([]string, error) {
	env, err := coerceDictArg("environment", a.Environment)
	if err != nil {
		return nil, err
	}
	vals := map[string]string{}
	for k, v := range env {
		s, ok := v.(string)
		if !ok {
			return nil, Expectedf("environment keys and values must be strings")
		}
		vals[k] = s
	}
	if a.SuppressPersistentHistory {
		for _, k := range []string{"HISTFILE", "fish_history"} {
			if v, ok := vals[k]; ok && v != "" {
				return nil, Expectedf("environment variable %s conflicts with suppress_persistent_history=True; omit it or set it to an empty string", k)
			}
		}
		if v, ok := vals["fish_private_mode"]; ok && v != "1" {
			return nil, Expectedf("environment variable fish_private_mode conflicts with suppress_persistent_history=True; omit it or set it to '1'")
		}
		vals["HISTFILE"] = ""
		vals["fish_history"] = ""
		vals["fish_private_mode"] = "1"
		hc, ok := vals["HISTCONTROL"]
		switch {
		case !ok || hc == "":
			vals["HISTCONTROL"] = "ignorespace"
		default:
			has := false
			for _, p := range strings.Split(hc, ":") {
				if p == "ignorespace" || p == "ignoreboth" {
					has = true
				}
			}
			if !has {
				vals["HISTCONTROL"] = hc + ":ignorespace"
			}
		}
	}
	keys := slices.Sorted(maps.Keys(vals))
	args := make([]string, 0, len(keys))
	for _, k := range keys {
		args = append(args, k+"="+vals[k])
	}
	return args, nil
}

// expandHome expands a leading ~ in a local start directory.
func expandHome(c *Call, p string) string {
	if !c.IsLocal() || !strings.HasPrefix(p, "~") {
		return p
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}
