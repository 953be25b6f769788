package transport

import (
	"encoding/hex"
	"fmt"
	"os"
	"testing"

	"github.com/fleetmux/fleetmux/tmux/tmuxtest"
)

// argvHelperEnv makes the test binary print its own arguments, one per line
// and hex-encoded, instead of running tests. Quoting tests run it through a
// real shell to see exactly what exec(2) received.
const argvHelperEnv = "FLEETMUX_TEST_PRINT_ARGV"

func TestMain(m *testing.M) {
	if os.Getenv(argvHelperEnv) == "1" {
		for _, a := range os.Args[1:] {
			fmt.Println(hex.EncodeToString([]byte(a)))
		}
		os.Exit(0)
	}
	code := m.Run()
	tmuxtest.SweepSockets(os.Getpid())
	os.Exit(code)
}
