package cli

import "testing"

func TestCountOf(t *testing.T) {
	for n, want := range map[int]string{0: "0 hosts", 1: "1 host", 2: "2 hosts", 12: "12 hosts"} {
		if got := CountOf(n, "host", "hosts"); got != want {
			t.Errorf("countOf(%d) = %q, want %q", n, got, want)
		}
	}
}

// The ssh_config files named are the ones looked at, missing defaults
// included, as plain text.
func TestDescribeSSHConfigs(t *testing.T) {
	const user, sys = "/home/me/.ssh/config", "/etc/ssh/ssh_config"
	for _, tc := range []struct {
		read []string
		want string
	}{
		{[]string{sys}, "/home/me/.ssh/config (not found), /etc/ssh/ssh_config"},
		{nil, "/home/me/.ssh/config (not found), /etc/ssh/ssh_config (not found)"},
		{[]string{user, "/home/me/.ssh/conf.d/a", sys}, "/home/me/.ssh/config, /home/me/.ssh/conf.d/a, /etc/ssh/ssh_config"},
		{[]string{user}, "/home/me/.ssh/config, /etc/ssh/ssh_config (not found)"},
	} {
		if got := DescribeSSHConfigs(user, tc.read, sys); got != tc.want {
			t.Errorf("read %q: %q, want %q", tc.read, got, tc.want)
		}
	}
}
