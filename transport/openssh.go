package transport

import (
	"context"
	"fmt"
	"os/exec"
)

// OpenSSH runs commands with the system ssh client and a ControlMaster
// socket, so every call reuses one multiplexed connection. It exists as a
// baseline for `fleetmux bench`; fleetmux itself uses the SSH runner.
type OpenSSH struct {
	Alias       string // ssh_config alias
	ConfigFile  string // -F file; "" for the default configuration
	ControlPath string // control socket path
	local       *Local
}

// NewOpenSSH returns an OpenSSH runner for alias.
func NewOpenSSH(alias, configFile, controlPath string) *OpenSSH {
	return &OpenSSH{Alias: alias, ConfigFile: configFile, ControlPath: controlPath, local: NewLocal()}
}

func (o *OpenSSH) args() []string {
	a := []string{"ssh"}
	if o.ConfigFile != "" {
		a = append(a, "-F", o.ConfigFile)
	}
	return append(a, "-o", "ControlMaster=auto", "-o", "ControlPath="+o.ControlPath, "-o", "ControlPersist=120", "-o", "BatchMode=yes", "-T", o.Alias, "--")
}

// Run implements Runner. argv is quoted by QuoteArgv, the one quoting
// point, and handed to the remote shell.
func (o *OpenSSH) Run(ctx context.Context, argv []string, stdin []byte) (Result, error) {
	cmd, err := QuoteArgv(argv)
	if err != nil {
		return Result{}, fmt.Errorf("openssh %s: %w", o.Alias, err)
	}
	res, err := o.local.Run(ctx, append(o.args(), cmd), stdin)
	if err == nil && res.ExitCode == 255 {
		return res, fmt.Errorf("openssh %s: %s: %w", o.Alias, string(res.Stderr), ErrUnreachable)
	}
	return res, err
}

// Close stops the control master.
func (o *OpenSSH) Close() error {
	a := []string{"ssh"}
	if o.ConfigFile != "" {
		a = append(a, "-F", o.ConfigFile)
	}
	a = append(a, "-o", "ControlPath="+o.ControlPath, "-O", "exit", o.Alias)
	return exec.Command(a[0], a[1:]...).Run()
}
