//go:build !linux

package ttyinput

import "io/fs"

// termModes cannot read a terminal's modes here.
func termModes(string) (canon, echo int) { return -1, -1 }

// devNumber: no /proc here.
func devNumber(fs.FileInfo) (int, bool) { return 0, false }

func machine() string { return "" }
