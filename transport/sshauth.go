package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// authSetup is the public-key authentication of one handshake: keys from
// ssh-agent and from the IdentityFiles, in OpenSSH's order.
type authSetup struct {
	methods []ssh.AuthMethod
	offered []string // descriptions of the keys offered, for errors
	notes   []string // keys that could not be used, and why
	agent   net.Conn // open during the handshake only
}

func (a *authSetup) close() {
	if a.agent != nil {
		a.agent.Close()
	}
}

// describe summarizes what was offered and what was skipped, for an
// authentication error.
func (a *authSetup) describe() string {
	var parts []string
	if len(a.offered) == 0 {
		parts = append(parts, "no usable key")
	} else {
		parts = append(parts, "offered "+strings.Join(a.offered, ", "))
	}
	parts = append(parts, a.notes...)
	return strings.Join(parts, "; ")
}

// agentSocket resolves IdentityAgent as ssh_config(5) defines it.
func agentSocket(cfg *SSHConfig) string {
	switch cfg.IdentityAgent {
	case "", "SSH_AUTH_SOCK":
		return os.Getenv("SSH_AUTH_SOCK")
	case "none":
		return ""
	default:
		return cfg.IdentityAgent
	}
}

// newAuth collects the keys to offer:
//  1. agent keys that match an IdentityFile, in IdentityFile order;
//  2. the agent's other keys, unless IdentitiesOnly;
//  3. unencrypted IdentityFile keys the agent does not hold.
//
// Missing IdentityFiles are skipped silently (OpenSSH's default list names
// files that usually do not exist). An encrypted file whose key is not in
// the agent cannot be used without a prompt; it is noted, and the note
// appears in the error if authentication fails.
func newAuth(ctx context.Context, cfg *SSHConfig) (*authSetup, error) {
	a := &authSetup{}
	type fileKey struct {
		path   string
		pub    ssh.PublicKey // nil if unknown
		signer ssh.Signer    // nil if encrypted or unreadable
	}
	var files []fileKey
	for _, path := range cfg.IdentityFiles {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			// OpenSSH accepts a public key alone when the agent (or a
			// token) holds the private half.
			if pub := readPublicKey(path + ".pub"); pub != nil {
				files = append(files, fileKey{path: path, pub: pub})
			}
			continue
		}
		if err != nil {
			a.notes = append(a.notes, fmt.Sprintf("identity file %s: %v", path, err))
			continue
		}
		fk := fileKey{path: path}
		signer, err := ssh.ParsePrivateKey(data)
		var pme *ssh.PassphraseMissingError
		switch {
		case err == nil:
			fk.signer, fk.pub = signer, signer.PublicKey()
		case errors.As(err, &pme):
			fk.pub = pme.PublicKey
			if fk.pub == nil {
				fk.pub = readPublicKey(path + ".pub")
			}
		default:
			a.notes = append(a.notes, fmt.Sprintf("identity file %s: %v", path, err))
			continue
		}
		files = append(files, fk)
	}

	var agentSigners []ssh.Signer
	if sock := agentSocket(cfg); sock != "" {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", sock)
		if err != nil {
			a.notes = append(a.notes, fmt.Sprintf("ssh-agent %s: %v", sock, err))
		} else {
			a.agent = conn
			if dl, ok := ctx.Deadline(); ok {
				conn.SetDeadline(dl) // listing and signing happen within the handshake's bound
			}
			agentSigners, err = agent.NewClient(conn).Signers()
			if err != nil {
				a.notes = append(a.notes, fmt.Sprintf("ssh-agent %s: %v", sock, err))
				agentSigners = nil
			}
		}
	}

	var signers []ssh.Signer
	used := make([]bool, len(agentSigners))
	inAgent := func(pub ssh.PublicKey) int {
		if pub == nil {
			return -1
		}
		for i, s := range agentSigners {
			if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
				return i
			}
		}
		return -1
	}
	for _, f := range files {
		if i := inAgent(f.pub); i >= 0 && !used[i] {
			used[i] = true
			signers = append(signers, agentSigners[i])
			a.offered = append(a.offered, fmt.Sprintf("%s (agent)", f.path))
		}
	}
	if !cfg.IdentitiesOnly {
		for i, s := range agentSigners {
			if !used[i] {
				used[i] = true
				signers = append(signers, s)
				a.offered = append(a.offered, "agent key "+ssh.FingerprintSHA256(s.PublicKey()))
			}
		}
	}
	for _, f := range files {
		if inAgent(f.pub) >= 0 {
			continue
		}
		if f.signer == nil {
			if _, err := os.Stat(f.path); err == nil {
				a.notes = append(a.notes, fmt.Sprintf("identity file %s is encrypted and no ssh-agent holds its key (add it with ssh-add)", f.path))
			}
			continue
		}
		signers = append(signers, f.signer)
		a.offered = append(a.offered, f.path)
	}
	if len(signers) > 0 {
		a.methods = []ssh.AuthMethod{ssh.PublicKeys(signers...)}
	}
	return a, nil
}

func readPublicKey(path string) ssh.PublicKey {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return nil
	}
	return pub
}
