// Package cli holds what fleetmux's subcommands share beyond the flags:
// the --hosts selection and ssh_config inventory, the names of the
// ssh_config files looked at, counted nouns and one-line texts for
// messages, and bounded parallel checks.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/fleetmux/fleetmux/fleet"
)

// ErrBadHosts marks a --hosts value that is not a valid selection (a
// usage error, exit status 2).
var ErrBadHosts = errors.New("--hosts")

// LoadInventory parses --hosts and loads the ssh_config inventory.
func LoadInventory(patterns, sshConfig string) (fleet.Selection, *fleet.Inventory, error) {
	sel, err := fleet.ParseSelection(patterns)
	if err != nil {
		return sel, nil, fmt.Errorf("%w: %w", ErrBadHosts, err)
	}
	inv, err := fleet.LoadInventory(fleet.InventoryOptions{UserConfig: sshConfig})
	return sel, inv, err
}

// ExitStatus is 2 for a usage error in --hosts, 1 otherwise.
func ExitStatus(err error) int {
	if errors.Is(err, ErrBadHosts) {
		return 2
	}
	return 1
}

// SSHConfigsLookedAt names, comma-separated, the ssh_config files the
// inventory looked at: the files read (Includes included) and the default
// files that do not exist, marked "(not found)".
func SSHConfigsLookedAt(inv *fleet.Inventory) string {
	return DescribeSSHConfigs(inv.UserConfigPath(), inv.Files(), fleet.DefaultSystemConfig)
}

// DescribeSSHConfigs is SSHConfigsLookedAt for the user file, the files
// read and the system file.
func DescribeSSHConfigs(user string, read []string, system string) string {
	var out []string
	if !slices.Contains(read, user) {
		out = append(out, user+" (not found)")
	}
	out = append(out, read...)
	if !slices.Contains(read, system) {
		out = append(out, system+" (not found)")
	}
	return strings.Join(out, ", ")
}

// ParseFlags parses a subcommand's args with fs (named as the command,
// "fleetmux bench"). --help prints usage on stdout and returns 0; a bad
// flag or an argument left over is one line on stderr and returns 2;
// otherwise it returns -1 and the command goes on.
func ParseFlags(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) int {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v (see %s --help)\n", fs.Name(), err, fs.Name())
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q (see %s --help)\n", fs.Name(), fs.Arg(0), fs.Name())
		return 2
	}
	return -1
}

// CountOf is "1 host", "2 hosts": n and the word in its number.
func CountOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// OneLine is s with every run of white space (newlines included) made one
// space.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ForEachLimited calls f(0..n-1) with at most limit calls at a time and
// returns when all have returned.
func ForEachLimited(n, limit int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}(i)
	}
	wg.Wait()
}
