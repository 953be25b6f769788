package transport

import "time"

// SSHConfig is everything the SSH transport needs to reach one host. Package
// fleet fills it from ssh_config with `ssh -G` semantics (tokens and ~
// already expanded); the transport never reads ssh_config itself.
type SSHConfig struct {
	Alias                 string        // the ssh_config Host alias (used in errors and logs)
	HostName              string        // resolved HostName
	Port                  int           // resolved Port (22 when unset)
	User                  string        // resolved User
	IdentityFiles         []string      // IdentityFile values, in order, expanded
	IdentitiesOnly        bool          // only offer IdentityFiles (agent keys filtered to them)
	IdentityAgent         string        // "" or "SSH_AUTH_SOCK": use $SSH_AUTH_SOCK; "none": no agent; else a socket path
	Jumps                 []*SSHConfig  // ProxyJump hops, first hop first; nil for a direct connection
	UserKnownHostsFiles   []string      // expanded; missing files are skipped
	GlobalKnownHostsFiles []string      // expanded; missing files are skipped
	StrictHostKeyChecking string        // "yes", "ask", "accept-new", "no" or "off" (lower case)
	HashKnownHosts        bool          // hash host names written by accept-new
	HostKeyAlias          string        // name to look up in known_hosts instead of HostName
	ConnectTimeout        time.Duration // TCP connect + handshake bound; 0 means 10s
	ServerAliveInterval   time.Duration // keepalive period; 0 means DefaultKeepaliveInterval (15s)
	ServerAliveCountMax   int           // missed keepalives before the connection is dropped (default 3)
}
