package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEnsureOwnCreatesAndReloads(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	c0, k0 := p.Own()
	require.Nil(t, c0)
	require.Nil(t, k0)

	cert, key, err := p.EnsureOwn("urn:host1:uastack:server", []string{"host1", "host1.example", "192.168.1.5"}, OwnOptions{ApplicationName: "uastack server", Key: keyPeer})
	require.NoError(t, err)
	require.Same(t, keyPeer, key)

	// Part 6 §6.2.2 contents.
	require.Equal(t, 3, cert.Version)
	require.Equal(t, x509.SHA256WithRSA, cert.SignatureAlgorithm)
	require.Equal(t, "uastack server", cert.Subject.CommonName)
	require.Equal(t, cert.RawSubject, cert.RawIssuer, "self-signed: subject equals issuer")
	require.NotEmpty(t, cert.SubjectKeyId)
	require.Equal(t, cert.SubjectKeyId, cert.AuthorityKeyId)
	require.Len(t, cert.URIs, 1)
	require.Equal(t, "urn:host1:uastack:server", cert.URIs[0].String())
	require.Equal(t, []string{"host1", "host1.example"}, cert.DNSNames)
	require.Len(t, cert.IPAddresses, 1)
	require.Equal(t, "192.168.1.5", cert.IPAddresses[0].String())
	require.Equal(t, x509.KeyUsageDigitalSignature|x509.KeyUsageContentCommitment|x509.KeyUsageKeyEncipherment|x509.KeyUsageDataEncipherment|x509.KeyUsageCertSign, cert.KeyUsage)
	require.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, cert.ExtKeyUsage)
	require.True(t, cert.BasicConstraintsValid)
	require.False(t, cert.IsCA)
	require.Equal(t, testNow.AddDate(0, 12, 0), cert.NotAfter)
	require.Equal(t, testNow.Add(-time.Hour), cert.NotBefore)
	require.NoError(t, cert.CheckSignature(cert.SignatureAlgorithm, cert.RawTBSCertificate, cert.Signature))
	require.Equal(t, 1, cert.SerialNumber.Sign())

	// Files: DER certificate, PKCS#8 PEM key with mode 0600.
	base := "uastack server [" + Thumbprint(cert) + "]"
	der, err := os.ReadFile(filepath.Join(p.Root(), "own", "certs", base+".der"))
	require.NoError(t, err)
	require.Equal(t, cert.Raw, der)
	keyFile := filepath.Join(p.Root(), "own", "private", base+".pem")
	fi, err := os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	pemData, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	blk, _ := pem.Decode(pemData)
	require.Equal(t, "PRIVATE KEY", blk.Type)

	got, gotKey := p.Own()
	require.Same(t, cert, got)
	require.Same(t, key, gotKey)

	// A second start loads the same certificate instead of creating one.
	p2, err := Open(p.Root(), Options{Now: p.opts.Now, Logger: p.log})
	require.NoError(t, err)
	defer p2.Close()
	cert2, key2, err := p2.EnsureOwn("urn:host1:uastack:server", nil, OwnOptions{Key: keyPeer2})
	require.NoError(t, err)
	require.True(t, bytes.Equal(cert.Raw, cert2.Raw))
	require.True(t, keyPeer.Equal(key2))

	// A different ApplicationUri gets its own certificate.
	cert3, _, err := p2.EnsureOwn("urn:host1:other", []string{"host1"}, OwnOptions{Key: keyPeer2})
	require.NoError(t, err)
	require.NotEqual(t, Thumbprint(cert), Thumbprint(cert3))
	require.Equal(t, "host1:other", cert3.Subject.CommonName, "default CN: the URI host, or for a URN its specific part")
}

func TestEnsureOwnRenewsExpired(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	cert, _, err := p.EnsureOwn("urn:a", []string{"a"}, OwnOptions{Key: keyPeer})
	require.NoError(t, err)
	later := cert.NotAfter.AddDate(0, 0, 1)
	p2, err := Open(p.Root(), Options{Now: func() time.Time { return later }, Logger: p.log})
	require.NoError(t, err)
	defer p2.Close()
	cert2, _, err := p2.EnsureOwn("urn:a", []string{"a"}, OwnOptions{Key: keyPeer})
	require.NoError(t, err)
	require.NotEqual(t, Thumbprint(cert), Thumbprint(cert2))
	require.True(t, cert2.NotAfter.After(later))
}

func TestEnsureOwnRejectsBadOptions(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	_, _, err := p.EnsureOwn("", nil, OwnOptions{})
	require.Error(t, err)
	_, _, err = p.EnsureOwn("urn:a", nil, OwnOptions{KeyBits: 1024})
	require.ErrorContains(t, err, "outside 2048–4096")
	_, _, err = p.EnsureOwn("urn:a", nil, OwnOptions{KeyBits: 8192})
	require.ErrorContains(t, err, "outside 2048–4096")
}

func TestOpenCreatesFolders(t *testing.T) {
	t.Parallel()
	p := openTest(t, Options{})
	for _, d := range []string{"own/certs", "own/private", "trusted/certs", "trusted/crl", "issuer/certs", "issuer/crl", "rejected/certs"} {
		fi, err := os.Stat(filepath.Join(p.Root(), filepath.FromSlash(d)))
		require.NoError(t, err, d)
		require.True(t, fi.IsDir(), d)
	}
	fi, err := os.Stat(filepath.Join(p.Root(), "own", "private"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}
