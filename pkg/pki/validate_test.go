package pki

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
)

// requireCode asserts that err is a *ValidationError with exactly code.
func requireCode(t *testing.T, err error, code status.Code) *ValidationError {
	t.Helper()
	require.Error(t, err)
	var ve *ValidationError
	require.True(t, errors.As(err, &ve), "error %v is not a *ValidationError", err)
	require.Equal(t, code, ve.Code, ve.Message)
	require.ErrorIs(t, err, code)
	return ve
}

func trust(t *testing.T, p *PKI, c *x509.Certificate) string {
	t.Helper()
	f := put(t, p, dirTrustedCerts, fileName(c), c.Raw)
	require.NoError(t, p.Reload())
	return f
}

func TestUntrustedSelfSignedIsRejectedThenTrusted(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	peer := selfSigned(t, "peer", keyPeer, nil)

	err := p.Validate(peer.Raw, ValidateOptions{ApplicationURI: "urn:test:peer", Usage: UsageClient})
	ve := requireCode(t, err, status.BadCertificateUntrusted)
	rejected := filepath.Join(p.Root(), "rejected", "certs", "peer ["+Thumbprint(peer)+"].der")
	require.Equal(t,
		`certificate "CN=peer,O=Test" (thumbprint `+Thumbprint(peer)+`) is not trusted: copy `+rejected+` to `+
			filepath.Join(p.Root(), "trusted", "certs")+` to trust it, then call Reload (or wait for the store poll)`,
		ve.Message)
	require.Equal(t, Thumbprint(peer), ve.Thumbprint)
	require.Equal(t, "CN=peer,O=Test", ve.Subject)
	require.True(t, strings.HasPrefix(err.Error(), "BadCertificateUntrusted: "))

	// The copy appears in rejected/certs without the caller waiting for it.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(rejected)
		return err == nil && bytes.Equal(b, peer.Raw)
	}, 5*time.Second, 5*time.Millisecond)

	// Following the message's advice trusts it.
	data, err := os.ReadFile(rejected)
	require.NoError(t, err)
	put(t, p, dirTrustedCerts, filepath.Base(rejected), data)
	require.NoError(t, p.Reload())
	require.NoError(t, p.Validate(peer.Raw, ValidateOptions{ApplicationURI: "urn:test:peer", Usage: UsageClient}))
	require.NoError(t, p.ValidateChain([]*x509.Certificate{peer}, ValidateOptions{}))
	require.True(t, p.IsTrusted(peer))
}

func TestPEMInTrustedStore(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	peer := selfSigned(t, "pem", keyPeer, nil)
	put(t, p, dirTrustedCerts, "pem.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: peer.Raw}))
	put(t, p, dirTrustedCerts, "junk.der", []byte("not a certificate"))
	require.NoError(t, p.Reload())
	require.NoError(t, p.Validate(peer.Raw, ValidateOptions{}))
}

func TestStructureInvalid(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	requireCode(t, p.Validate([]byte{0x30, 0x03, 0x02, 0x01}, ValidateOptions{}), status.BadCertificateInvalid)
	requireCode(t, p.Validate(nil, ValidateOptions{}), status.BadCertificateInvalid)
	requireCode(t, p.ValidateChain(nil, ValidateOptions{}), status.BadCertificateInvalid)

	// A tampered self-signature is invalid, even when the name is trusted.
	peer := selfSigned(t, "tamper", keyPeer, nil)
	bad := bytes.Clone(peer.Raw)
	bad[len(bad)-1] ^= 0xff
	requireCode(t, p.Validate(bad, ValidateOptions{}), status.BadCertificateInvalid)
}

func TestValidityPeriod(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	expired := selfSigned(t, "expired", keyPeer, func(c *x509.Certificate) {
		c.NotBefore, c.NotAfter = testNow.AddDate(-2, 0, 0), testNow.AddDate(0, 0, -1)
	})
	future := selfSigned(t, "future", keyPeer, func(c *x509.Certificate) {
		c.NotBefore, c.NotAfter = testNow.AddDate(0, 0, 1), testNow.AddDate(1, 0, 0)
	})
	trust(t, p, expired)
	trust(t, p, future)
	ve := requireCode(t, p.Validate(expired.Raw, ValidateOptions{}), status.BadCertificateTimeInvalid)
	require.Contains(t, ve.Message, "renew the certificate")
	requireCode(t, p.Validate(future.Raw, ValidateOptions{}), status.BadCertificateTimeInvalid)
	// Suppressible, and the time is per call.
	require.NoError(t, p.Validate(expired.Raw, ValidateOptions{Suppress: SuppressTime}))
	require.NoError(t, p.Validate(future.Raw, ValidateOptions{Now: testNow.AddDate(0, 1, 0)}))

	// Trust comes before time (Table 106): an expired stranger is untrusted.
	stranger := selfSigned(t, "stranger", keyPeer, func(c *x509.Certificate) { c.NotAfter = testNow.Add(-time.Hour) })
	requireCode(t, p.Validate(stranger.Raw, ValidateOptions{}), status.BadCertificateUntrusted)
}

// caSetup makes a CA and a leaf it issued.
func caSetup(t *testing.T) (ca, leaf *x509.Certificate) {
	keys(t)
	ca = newCA(t, "Test CA", keyCA, nil)
	leaf = issue(t, "leaf", keyPeer, ca, keyCA, nil)
	return ca, leaf
}

func TestCAIssuedChain(t *testing.T) {
	t.Parallel()
	ca, leaf := caSetup(t)

	t.Run("CA only in issuer: chain builds but is untrusted", func(t *testing.T) {
		p := openTest(t, Options{})
		put(t, p, dirIssuerCerts, "ca.der", ca.Raw)
		put(t, p, dirIssuerCRL, "ca.crl", crlOf(t, ca, keyCA))
		require.NoError(t, p.Reload())
		ve := requireCode(t, p.Validate(leaf.Raw, ValidateOptions{}), status.BadCertificateUntrusted)
		require.Contains(t, ve.Message, `issued by "CN=Test CA"`)
		require.Contains(t, ve.Message, `or put the certificate of "CN=Test CA" there`)
		// Trusting the leaf itself is enough.
		trust(t, p, leaf)
		require.NoError(t, p.Validate(leaf.Raw, ValidateOptions{ApplicationURI: "urn:test:leaf", Usage: UsageServer}))
	})
	t.Run("CA trusted", func(t *testing.T) {
		p := openTest(t, Options{})
		put(t, p, dirTrustedCerts, "ca.der", ca.Raw)
		put(t, p, dirTrustedCRL, "ca.crl", crlOf(t, ca, keyCA))
		require.NoError(t, p.Reload())
		require.NoError(t, p.Validate(leaf.Raw, ValidateOptions{Usage: UsageClient}))
		// Another leaf of the same CA is trusted too.
		other := issue(t, "other", keyPeer2, ca, keyCA, nil)
		require.NoError(t, p.Validate(other.Raw, ValidateOptions{}))
	})
	t.Run("CA supplied by the peer only", func(t *testing.T) {
		p := openTest(t, Options{Suppress: SuppressRevocationUnknown})
		requireCode(t, p.Validate(concat(leaf, ca), ValidateOptions{}), status.BadCertificateUntrusted)
		trust(t, p, ca)
		require.NoError(t, p.Validate(concat(leaf, ca), ValidateOptions{}))
	})
	t.Run("issuer missing", func(t *testing.T) {
		p := openTest(t, Options{})
		ve := requireCode(t, p.Validate(leaf.Raw, ValidateOptions{}), status.BadCertificateChainIncomplete)
		require.Contains(t, ve.Message, `was issued by "CN=Test CA", which is in neither`)
		require.Contains(t, ve.Message, filepath.Join(p.Root(), "issuer", "certs"))
	})
	t.Run("issuer with the same name but another key", func(t *testing.T) {
		p := openTest(t, Options{})
		// Same name and key identifier as the real CA, different key.
		impostor := newCA(t, "Test CA", keyIM, func(c *x509.Certificate) { c.SubjectKeyId = skid(keyCA) })
		trust(t, p, impostor)
		requireCode(t, p.Validate(leaf.Raw, ValidateOptions{}), status.BadCertificateInvalid)
	})
	t.Run("issuer time invalid", func(t *testing.T) {
		oldCA := newCA(t, "Old CA", keyCA, func(c *x509.Certificate) { c.NotAfter = testNow.Add(-time.Hour) })
		l := issue(t, "leaf", keyPeer, oldCA, keyCA, nil)
		p := openTest(t, Options{})
		trust(t, p, oldCA)
		put(t, p, dirTrustedCRL, "ca.crl", crlOf(t, oldCA, keyCA))
		require.NoError(t, p.Reload())
		requireCode(t, p.Validate(l.Raw, ValidateOptions{}), status.BadCertificateIssuerTimeInvalid)
	})
	t.Run("issuer not a CA", func(t *testing.T) {
		notCA := newCA(t, "Not CA", keyCA, func(c *x509.Certificate) { c.IsCA = false; c.KeyUsage = x509.KeyUsageDigitalSignature })
		l := issue(t, "leaf", keyPeer, notCA, keyCA, nil)
		p := openTest(t, Options{Suppress: SuppressRevocationUnknown})
		trust(t, p, notCA)
		requireCode(t, p.Validate(l.Raw, ValidateOptions{}), status.BadCertificateIssuerUseNotAllowed)
	})
}

func TestRevocation(t *testing.T) {
	t.Parallel()
	ca, leaf := caSetup(t)

	t.Run("leaf revoked", func(t *testing.T) {
		p := openTest(t, Options{})
		trust(t, p, ca)
		put(t, p, dirTrustedCRL, "ca.crl", crlOf(t, ca, keyCA, leaf))
		require.NoError(t, p.Reload())
		ve := requireCode(t, p.Validate(leaf.Raw, ValidateOptions{}), status.BadCertificateRevoked)
		require.Contains(t, ve.Message, "was revoked")
		require.False(t, p.IsTrusted(leaf))
		// Not suppressible.
		requireCode(t, p.Validate(leaf.Raw, ValidateOptions{Suppress: SuppressRevocationUnknown | SuppressUsage | SuppressTime | SuppressPolicyCheck}), status.BadCertificateRevoked)
	})
	t.Run("intermediate revoked", func(t *testing.T) {
		im := issue(t, "Intermediate", keyIM, ca, keyCA, func(c *x509.Certificate) {
			c.IsCA, c.KeyUsage, c.ExtKeyUsage, c.URIs = true, x509.KeyUsageCertSign|x509.KeyUsageCRLSign, nil, nil
		})
		l := issue(t, "leaf2", keyPeer, im, keyIM, nil)
		p := openTest(t, Options{})
		trust(t, p, ca)
		put(t, p, dirIssuerCerts, "im.der", im.Raw)
		put(t, p, dirIssuerCRL, "im.crl", crlOf(t, im, keyIM))
		put(t, p, dirTrustedCRL, "ca.crl", crlOf(t, ca, keyCA, im))
		require.NoError(t, p.Reload())
		requireCode(t, p.Validate(l.Raw, ValidateOptions{}), status.BadCertificateIssuerRevoked)
	})
	t.Run("CA without CRL", func(t *testing.T) {
		p := openTest(t, Options{})
		trust(t, p, ca)
		ve := requireCode(t, p.Validate(leaf.Raw, ValidateOptions{}), status.BadCertificateRevocationUnknown)
		require.Contains(t, ve.Message, filepath.Join(p.Root(), "trusted", "crl"))
		require.NoError(t, p.Validate(leaf.Raw, ValidateOptions{Suppress: SuppressRevocationUnknown}))
		// A CRL signed by another key does not count.
		put(t, p, dirTrustedCRL, "forged.crl", crlOf(t, newCA(t, "Test CA", keyIM, nil), keyIM))
		require.NoError(t, p.Reload())
		requireCode(t, p.Validate(leaf.Raw, ValidateOptions{}), status.BadCertificateRevocationUnknown)
		// PEM CRLs are read too.
		put(t, p, dirTrustedCRL, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: crlOf(t, ca, keyCA)}))
		require.NoError(t, p.Reload())
		require.NoError(t, p.Validate(leaf.Raw, ValidateOptions{}))
	})
	t.Run("intermediate whose CA has no CRL", func(t *testing.T) {
		im := issue(t, "Intermediate", keyIM, ca, keyCA, func(c *x509.Certificate) {
			c.IsCA, c.KeyUsage, c.ExtKeyUsage, c.URIs = true, x509.KeyUsageCertSign|x509.KeyUsageCRLSign, nil, nil
		})
		l := issue(t, "leaf3", keyPeer, im, keyIM, nil)
		p := openTest(t, Options{})
		trust(t, p, ca)
		put(t, p, dirIssuerCerts, "im.der", im.Raw)
		put(t, p, dirIssuerCRL, "im.crl", crlOf(t, im, keyIM))
		require.NoError(t, p.Reload())
		requireCode(t, p.Validate(l.Raw, ValidateOptions{}), status.BadCertificateIssuerRevocationUnknown)
	})
}

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	small := selfSigned(t, "small", key1k, nil)
	sha1 := selfSigned(t, "sha1", keyPeer, func(c *x509.Certificate) { c.SignatureAlgorithm = x509.SHA1WithRSA })
	trust(t, p, small)
	trust(t, p, sha1)

	ve := requireCode(t, p.Validate(small.Raw, ValidateOptions{}), status.BadCertificatePolicyCheckFailed)
	require.Contains(t, ve.Message, "1024-bit RSA key but at least 2048 bits")
	require.NoError(t, p.Validate(small.Raw, ValidateOptions{MinKeyBits: 1024}))

	ve = requireCode(t, p.Validate(sha1.Raw, ValidateOptions{}), status.BadCertificatePolicyCheckFailed)
	require.Contains(t, ve.Message, "SHA1-RSA")
	require.NoError(t, p.Validate(sha1.Raw, ValidateOptions{AllowSHA1: true}))
	require.NoError(t, p.Validate(sha1.Raw, ValidateOptions{Suppress: SuppressPolicyCheck}))

	// Policy comes before trust (Table 106).
	stranger := selfSigned(t, "small-stranger", key1k, nil)
	requireCode(t, p.Validate(stranger.Raw, ValidateOptions{}), status.BadCertificatePolicyCheckFailed)

	lenient := openTest(t, Options{MinKeyBits: 1024, AllowSHA1: true})
	trust(t, lenient, small)
	trust(t, lenient, sha1)
	require.NoError(t, lenient.Validate(small.Raw, ValidateOptions{}))
	require.NoError(t, lenient.Validate(sha1.Raw, ValidateOptions{}))
}

func TestURIAndHostName(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	peer := selfSigned(t, "peer", keyPeer, nil)
	trust(t, p, peer)

	ve := requireCode(t, p.Validate(peer.Raw, ValidateOptions{ApplicationURI: "urn:test:someone-else"}), status.BadCertificateUriInvalid)
	require.Contains(t, ve.Message, `["urn:test:peer"]`)
	require.Contains(t, ve.Message, `"urn:test:someone-else"`)
	require.NoError(t, p.Validate(peer.Raw, ValidateOptions{ApplicationURI: "urn:test:peer"}))
	// Not suppressible.
	requireCode(t, p.Validate(peer.Raw, ValidateOptions{ApplicationURI: "urn:x", Suppress: SuppressHostName | SuppressUsage}), status.BadCertificateUriInvalid)

	ve = requireCode(t, p.Validate(peer.Raw, ValidateOptions{Hostname: "other.example"}), status.BadCertificateHostNameInvalid)
	require.Contains(t, ve.Message, `not valid for host "other.example"`)
	require.NoError(t, p.Validate(peer.Raw, ValidateOptions{Hostname: "PEER.example"}))
	require.NoError(t, p.Validate(peer.Raw, ValidateOptions{Hostname: "10.0.0.7"}))
	requireCode(t, p.Validate(peer.Raw, ValidateOptions{Hostname: "10.0.0.8"}), status.BadCertificateHostNameInvalid)
	require.NoError(t, p.Validate(peer.Raw, ValidateOptions{Hostname: "other.example", Suppress: SuppressHostName}))

	// Host name comes before URI (Table 106).
	requireCode(t, p.Validate(peer.Raw, ValidateOptions{Hostname: "x", ApplicationURI: "urn:x"}), status.BadCertificateHostNameInvalid)
}

func TestUsage(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	noSig := selfSigned(t, "nosig", keyPeer, func(c *x509.Certificate) { c.KeyUsage = x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign })
	serverOnly := selfSigned(t, "serveronly", keyPeer, func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} })
	noEnc := selfSigned(t, "noenc", keyPeer, func(c *x509.Certificate) { c.KeyUsage = x509.KeyUsageDigitalSignature })
	for _, c := range []*x509.Certificate{noSig, serverOnly, noEnc} {
		trust(t, p, c)
	}
	requireCode(t, p.Validate(noSig.Raw, ValidateOptions{}), status.BadCertificateUseNotAllowed)
	requireCode(t, p.Validate(noEnc.Raw, ValidateOptions{}), status.BadCertificateUseNotAllowed)
	ve := requireCode(t, p.Validate(serverOnly.Raw, ValidateOptions{Usage: UsageClient}), status.BadCertificateUseNotAllowed)
	require.Contains(t, ve.Message, "clientAuth")
	require.NoError(t, p.Validate(serverOnly.Raw, ValidateOptions{Usage: UsageServer}))
	require.NoError(t, p.Validate(noSig.Raw, ValidateOptions{Suppress: SuppressUsage}))
}

func TestRejectedFolderIsBounded(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{MaxRejected: 3})
	var last *x509.Certificate
	for i := range 6 {
		last = selfSigned(t, "stranger"+string(rune('a'+i)), keyPeer, nil)
		requireCode(t, p.Validate(last.Raw, ValidateOptions{}), status.BadCertificateUntrusted)
		want := filepath.Join(p.dir(dirRejectedCerts), fileName(last))
		require.Eventually(t, func() bool { _, err := os.Stat(want); return err == nil }, 5*time.Second, 2*time.Millisecond)
		time.Sleep(2 * time.Millisecond) // distinct modification times
	}
	require.NoError(t, p.Close())
	es, err := os.ReadDir(p.dir(dirRejectedCerts))
	require.NoError(t, err)
	require.Len(t, es, 3)
	_, err = os.Stat(filepath.Join(p.dir(dirRejectedCerts), fileName(last)))
	require.NoError(t, err, "the newest copy is kept")
}

func TestTrustChangeNotification(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	peer := selfSigned(t, "peer", keyPeer, nil)
	f := trust(t, p, peer)
	require.True(t, p.IsTrusted(peer))
	gen := p.Generation()

	var calls atomic.Int32
	cancel := p.OnTrustChange(func() { calls.Add(1) })

	require.NoError(t, p.Reload())
	require.Zero(t, calls.Load(), "no change, no notification")
	require.Equal(t, gen, p.Generation())

	require.NoError(t, os.Remove(f))
	require.NoError(t, p.Reload())
	require.Equal(t, int32(1), calls.Load())
	require.Greater(t, p.Generation(), gen)
	require.False(t, p.IsTrusted(peer))
	requireCode(t, p.Validate(peer.Raw, ValidateOptions{}), status.BadCertificateUntrusted)

	cancel()
	trust(t, p, peer)
	require.Equal(t, int32(1), calls.Load(), "cancelled subscriber is not called")
	require.True(t, p.IsTrusted(peer))
}

func TestPollingReloads(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{PollInterval: 10 * time.Millisecond})
	peer := selfSigned(t, "polled", keyPeer, nil)
	changed := make(chan struct{}, 1)
	p.OnTrustChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	requireCode(t, p.Validate(peer.Raw, ValidateOptions{}), status.BadCertificateUntrusted)
	put(t, p, dirTrustedCerts, "polled.der", peer.Raw)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("poller did not notice the new trusted certificate")
	}
	require.NoError(t, p.Validate(peer.Raw, ValidateOptions{}))
}

// recordHandler collects log records.
type recordHandler struct {
	slog.Handler
	n *atomic.Int32
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.Contains(r.Message, "AutoAccept") {
		h.n.Add(1)
	}
	return nil
}

func TestAutoAcceptWarns(t *testing.T) {
	t.Parallel()
	var warns atomic.Int32
	log := slog.New(recordHandler{Handler: slog.DiscardHandler, n: &warns})
	p := openTest(t, Options{AutoAccept: true, Logger: log})
	require.Equal(t, int32(1), warns.Load(), "Open warns that AutoAccept is on")
	peer := selfSigned(t, "auto", keyPeer, nil)
	require.NoError(t, p.Validate(peer.Raw, ValidateOptions{}))
	require.NoError(t, p.Validate(peer.Raw, ValidateOptions{}))
	require.Equal(t, int32(2), warns.Load(), "one warning per accepted certificate")
	require.True(t, p.IsTrusted(peer))
	// Other checks still apply.
	requireCode(t, p.Validate(peer.Raw, ValidateOptions{ApplicationURI: "urn:x"}), status.BadCertificateUriInvalid)
	require.NoError(t, p.Close())
	es, err := os.ReadDir(p.dir(dirRejectedCerts))
	require.NoError(t, err)
	require.Empty(t, es, "an accepted certificate is not copied to rejected/")
}

func TestCacheFollowsGeneration(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{CacheSize: 2})
	peer := selfSigned(t, "cached", keyPeer, nil)
	requireCode(t, p.Validate(peer.Raw, ValidateOptions{}), status.BadCertificateUntrusted)
	v1 := p.verify(peer.Raw, nil)
	require.Same(t, v1, p.verify(peer.Raw, nil), "second look-up is served from the cache")
	trust(t, p, peer)
	require.NotSame(t, v1, p.verify(peer.Raw, nil))
	require.NoError(t, p.Validate(peer.Raw, ValidateOptions{}))
	// The cache stays bounded.
	for i := range 5 {
		c := selfSigned(t, "fill"+string(rune('a'+i)), keyPeer, nil)
		_ = p.Validate(c.Raw, ValidateOptions{})
	}
	n := len(*p.cache.Load())
	require.LessOrEqual(t, n, 2)
}

func TestConcurrentValidateAndReload(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	ca, leaf := caSetup(t)
	put(t, p, dirTrustedCRL, "ca.crl", crlOf(t, ca, keyCA))
	var stillTrusted atomic.Bool
	p.OnTrustChange(func() { stillTrusted.Store(p.IsTrusted(leaf, ca)) })
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				err := p.ValidateChain([]*x509.Certificate{leaf, ca}, ValidateOptions{})
				var ve *ValidationError
				if err != nil && (!errors.As(err, &ve) || ve.Code != status.BadCertificateUntrusted) {
					errs <- err
					return
				}
			}
		}()
	}
	f := filepath.Join(p.dir(dirTrustedCerts), "ca.der")
	for i := range 20 {
		if i%2 == 0 {
			require.NoError(t, os.WriteFile(f, ca.Raw, 0o644))
		} else {
			require.NoError(t, os.Remove(f))
		}
		require.NoError(t, p.Reload())
		require.Equal(t, i%2 == 0, stillTrusted.Load())
	}
	close(done)
	for range 4 {
		require.NoError(t, <-errs)
	}
}
