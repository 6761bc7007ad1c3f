package uasc

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// issue makes a certificate for key, signed by parent's key (self-signed when parent is
// nil). Certificates share the test keys: generating keys dominates test time otherwise.
func issue(t *testing.T, serial int64, name string, key *rsa.PrivateKey, parent *identity, notBefore, notAfter time.Time, ca bool) identity {
	t.Helper()
	u, _ := url.Parse("urn:uastack:test:" + name)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: "uasc trust test " + name},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment | x509.KeyUsageContentCommitment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  ca,
		URIs:                  []*url.URL{u},
	}
	if ca {
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage, tmpl.URIs = nil, nil
	}
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	} else {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return identity{key: key, der: der, cert: cert}
}

// openPKI opens a PKI in a temporary folder with the given certificates in trusted/certs
// and CRLs in trusted/crl.
func openPKI(t *testing.T, trusted map[string][]byte, crls map[string][]byte) *pki.PKI {
	t.Helper()
	root := t.TempDir()
	for dir, files := range map[string]map[string][]byte{"trusted/certs": trusted, "trusted/crl": crls} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
		for name, b := range files {
			require.NoError(t, os.WriteFile(filepath.Join(root, dir, name), b, 0o644))
		}
	}
	p, err := pki.Open(root, pki.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// clientValidator is ServerConfig.ValidateCertificate backed by a real PKI.
func clientValidator(p *pki.PKI) func(chain []*x509.Certificate) error {
	return func(chain []*x509.Certificate) error {
		return p.ValidateChain(chain, pki.ValidateOptions{Usage: pki.UsageClient})
	}
}

func secureClient(id identity) ClientConfig {
	cfg := clientConfig(secure)
	cfg.Certificate, cfg.Key = id.der, id.key
	return cfg
}

// TestRevalidateOnTrustChange removes a client's certificate from the trust list while its
// channel is open: the reload closes that channel with an ERR and keeps the other.
func TestRevalidateOnTrustChange(t *testing.T) {
	ids(t)
	now := time.Now()
	second := issue(t, 100, "second", clientID.key, nil, now.Add(-time.Hour), now.Add(24*time.Hour), false)
	p := openPKI(t, map[string][]byte{"first.der": clientID.der, "second.der": second.der}, nil)
	validate := clientValidator(p)
	ts := startServer(t, func(cfg *ServerConfig) { cfg.ValidateCertificate = validate })
	revalidated := make(chan int, 1)
	cancel := p.OnTrustChange(func() { revalidated <- ts.Revalidate(validate) })
	t.Cleanup(cancel)

	first, err := dialChannel(t, ts.addr, secureClient(clientID))
	require.NoError(t, err)
	keep, err := dialChannel(t, ts.addr, secureClient(second))
	require.NoError(t, err)
	read(t, first, 1, "before")
	read(t, keep, 2, "before")

	require.NoError(t, os.Remove(filepath.Join(p.Root(), "trusted", "certs", "first.der")))
	require.NoError(t, p.Reload())
	require.Equal(t, 1, <-revalidated, "channels closed")

	_, err = first.Request(context.Background(), readOf("after"))
	require.Error(t, err)
	requireChannelError(t, first, status.BadSecurityChecksFailed)
	read(t, keep, 3, "after")

	// The removed certificate cannot open a new channel either; the kept one can.
	_, err = dialChannel(t, ts.addr, secureClient(clientID))
	var ue *uacp.Error
	require.ErrorAs(t, err, &ue)
	require.Equal(t, status.BadSecurityChecksFailed, ue.Code)
	again, err := dialChannel(t, ts.addr, secureClient(second))
	require.NoError(t, err)
	read(t, again, 4, "new")

	// A reload that changes nothing the kept channels depend on closes nothing.
	require.NoError(t, os.WriteFile(filepath.Join(p.Root(), "trusted", "certs", "first.der"), clientID.der, 0o644))
	require.NoError(t, p.Reload())
	require.Equal(t, 0, <-revalidated)
	read(t, keep, 5, "still")
}

// TestRevalidateConcurrentOpen races Revalidate against channels being opened: a channel
// validated under the old trust list and tracked after the change is validated again.
func TestRevalidateConcurrentOpen(t *testing.T) {
	ids(t)
	var calls atomic.Int32
	var untrusted atomic.Bool
	gate := make(chan struct{})
	validated := make(chan struct{})
	ts := startServer(t, func(cfg *ServerConfig) {
		cfg.ValidateCertificate = func([]*x509.Certificate) error {
			if calls.Add(1) == 1 {
				close(validated)
				<-gate // hold the first validation until the trust list has changed
				return nil
			}
			if untrusted.Load() {
				return status.BadCertificateUntrusted
			}
			return nil
		}
	})
	errc := make(chan error, 1)
	go func() {
		_, err := dialChannel(t, ts.addr, secureClient(clientID))
		errc <- err
	}()
	<-validated
	untrusted.Store(true)
	require.Equal(t, 0, ts.Revalidate(func([]*x509.Certificate) error { return status.BadCertificateUntrusted }))
	close(gate)
	err := <-errc
	var ue *uacp.Error
	require.ErrorAs(t, err, &ue, "the open raced the trust change and must be refused, got %v", err)
	require.Equal(t, status.BadSecurityChecksFailed, ue.Code)
}

// TestCertificateRejection validates client certificates with a real PKI: every refusal
// arrives as an ERR with its status, and the server keeps serving.
//
// The channel does not know the ApplicationUri the client will claim: the check that the
// certificate's subjectAltName URI matches ApplicationDescription.ApplicationUri belongs to
// CreateSession (Part 4 §5.6.2), so it is not tested here.
func TestCertificateRejection(t *testing.T) {
	ids(t)
	now := time.Now()
	expired := issue(t, 200, "expired", clientID.key, nil, now.Add(-48*time.Hour), now.Add(-24*time.Hour), false)
	ca := issue(t, 300, "ca", strangerID.key, nil, now.Add(-time.Hour), now.Add(24*time.Hour), true)
	revoked := issue(t, 301, "revoked", clientID.key, &ca, now.Add(-time.Hour), now.Add(24*time.Hour), false)
	issued := issue(t, 302, "issued", clientID.key, &ca, now.Add(-time.Hour), now.Add(24*time.Hour), false)
	crl, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: big.NewInt(1), ThisUpdate: now.Add(-time.Hour), NextUpdate: now.Add(24 * time.Hour),
		RevokedCertificateEntries: []x509.RevocationListEntry{{SerialNumber: revoked.cert.SerialNumber, RevocationTime: now.Add(-time.Minute)}},
	}, ca.cert, ca.key)
	require.NoError(t, err)
	p := openPKI(t,
		map[string][]byte{"client.der": clientID.der, "expired.der": expired.der, "ca.der": ca.der},
		map[string][]byte{"ca.crl": crl})
	ts := startServer(t, func(cfg *ServerConfig) {
		cfg.Security = []SecurityConfig{{PolicyURI: secure.uri, Mode: secure.mode}}
		cfg.ValidateCertificate = clientValidator(p)
	})

	tests := []struct {
		name string
		id   identity
		want status.Code
	}{
		// Untrusted is reported as BadSecurityChecksFailed by the channel's design.
		{"UntrustedSelfSigned", strangerID, status.BadSecurityChecksFailed},
		{"ExpiredTrusted", expired, status.BadCertificateTimeInvalid},
		{"RevokedByCA", revoked, status.BadCertificateRevoked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dialChannel(t, ts.addr, secureClient(tc.id))
			var ue *uacp.Error
			require.ErrorAs(t, err, &ue, "want an ERR from the server, got %v", err)
			require.Equal(t, tc.want, ue.Code, "%v", err)
			// The reason is the status and its description; what the server knows beyond
			// that (file names in its PKI) stays in its log.
			require.Equal(t, tc.want.Name()+": "+tc.want.Description(), ue.Reason)
			require.NotContains(t, ue.Reason, p.Root())
			requireServing(t, ts)
		})
	}
	t.Run("IssuedByTrustedCA", func(t *testing.T) {
		cc, err := dialChannel(t, ts.addr, secureClient(issued))
		require.NoError(t, err)
		read(t, cc, 1, "issued")
	})
	t.Run("UntrustedCopiedToRejected", func(t *testing.T) {
		want := filepath.Join(p.Root(), "rejected", "certs")
		require.Eventually(t, func() bool {
			es, _ := os.ReadDir(want)
			for _, e := range es {
				b, err := os.ReadFile(filepath.Join(want, e.Name()))
				if err == nil && (string(b) == string(strangerID.der) || pemHolds(b, strangerID.cert)) {
					return true
				}
			}
			return false
		}, 5*time.Second, 20*time.Millisecond, "the untrusted certificate in %s", want)
	})
}

// pemHolds reports whether b, DER or PEM, holds c.
func pemHolds(b []byte, c *x509.Certificate) bool {
	certs, err := x509.ParseCertificates(b)
	if err != nil {
		return false
	}
	return len(certs) > 0 && certs[0].Equal(c)
}

// TestRevalidateStatus checks the status a dropped channel receives for a non-trust reason,
// that a None channel (no certificate) is kept, and that a dropped channel is untracked.
func TestRevalidateStatus(t *testing.T) {
	ids(t)
	ts := startServer(t, nil)
	cc, err := dialChannel(t, ts.addr, clientConfig(secure))
	require.NoError(t, err)
	none, err := dialChannel(t, ts.addr, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err)
	read(t, cc, 1, "before")
	n := ts.Revalidate(func(chain []*x509.Certificate) error {
		require.True(t, chain[0].Equal(clientID.cert))
		return status.BadCertificateRevoked
	})
	require.Equal(t, 1, n)
	requireChannelError(t, cc, status.BadCertificateRevoked)
	read(t, none, 2, "None has no certificate to re-check")
	require.Equal(t, 0, ts.Revalidate(func([]*x509.Certificate) error { return status.BadCertificateRevoked }), "the dropped channel is no longer tracked")
	requireServing(t, ts)
}
