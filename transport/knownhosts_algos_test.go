package transport

import (
	"slices"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestAlgosForKey pins the key-type to host-key-algorithm mapping (plain
// and certificate) that the certificate table replaced a switch for.
func TestAlgosForKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		cert bool
		want []string
	}{
		{ssh.KeyAlgoRSA, false, []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}},
		{ssh.KeyAlgoRSA, true, []string{ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01, ssh.CertAlgoRSAv01}},
		{ssh.KeyAlgoED25519, false, []string{ssh.KeyAlgoED25519}},
		{ssh.KeyAlgoED25519, true, []string{ssh.CertAlgoED25519v01}},
		{ssh.KeyAlgoECDSA256, true, []string{ssh.CertAlgoECDSA256v01}},
		{ssh.KeyAlgoECDSA384, true, []string{ssh.CertAlgoECDSA384v01}},
		{ssh.KeyAlgoECDSA521, true, []string{ssh.CertAlgoECDSA521v01}},
		{ssh.KeyAlgoSKED25519, true, []string{ssh.CertAlgoSKED25519v01}},
		{ssh.KeyAlgoSKECDSA256, true, []string{ssh.CertAlgoSKECDSA256v01}},
		{ssh.KeyAlgoSKECDSA256, false, []string{ssh.KeyAlgoSKECDSA256}},
		{"ssh-unknown", true, nil},
		{"ssh-unknown", false, []string{"ssh-unknown"}},
	} {
		if got := algosForKey(tc.key, tc.cert); !slices.Equal(got, tc.want) {
			t.Errorf("algosForKey(%q, %v) = %q, want %q", tc.key, tc.cert, got, tc.want)
		}
	}
}
