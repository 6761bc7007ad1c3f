package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testNow is the fixed clock of every test.
var testNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// RSA keys are generated once per test binary; key generation dominates
// test time otherwise.
var (
	keysOnce                               sync.Once
	keyPeer, keyPeer2, keyCA, keyIM, key1k *rsa.PrivateKey
)

func keys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		var wg sync.WaitGroup
		gen := func(dst **rsa.PrivateKey, bits int) {
			defer wg.Done()
			k, err := rsa.GenerateKey(rand.Reader, bits)
			if err != nil {
				panic(err)
			}
			*dst = k
		}
		wg.Add(5)
		go gen(&keyPeer, 2048)
		go gen(&keyPeer2, 2048)
		go gen(&keyCA, 2048)
		go gen(&keyIM, 2048)
		go gen(&key1k, 1024)
		wg.Wait()
	})
}

var serialCounter atomic.Int64

func skid(k *rsa.PrivateKey) []byte {
	h := sha1.Sum(x509.MarshalPKCS1PublicKey(&k.PublicKey))
	return h[:]
}

// appTemplate is an application instance certificate as Part 6 §6.2.2 wants it.
func appTemplate(cn, uri string, key *rsa.PrivateKey) *x509.Certificate {
	u, _ := url.Parse(uri)
	return &x509.Certificate{
		SerialNumber:          big.NewInt(1000 + serialCounter.Add(1)),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Test"}},
		NotBefore:             testNow.Add(-24 * time.Hour),
		NotAfter:              testNow.Add(365 * 24 * time.Hour),
		SignatureAlgorithm:    x509.SHA256WithRSA,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		SubjectKeyId:          skid(key),
		URIs:                  []*url.URL{u},
		DNSNames:              []string{"peer.example"},
		IPAddresses:           []net.IP{net.ParseIP("10.0.0.7")},
	}
}

// selfSigned makes a self-signed application certificate; mod may adjust
// the template first.
func selfSigned(t testing.TB, cn string, key *rsa.PrivateKey, mod func(*x509.Certificate)) *x509.Certificate {
	t.Helper()
	tmpl := appTemplate(cn, "urn:test:"+cn, key)
	tmpl.KeyUsage |= x509.KeyUsageCertSign
	tmpl.AuthorityKeyId = tmpl.SubjectKeyId
	if mod != nil {
		mod(tmpl)
	}
	return create(t, tmpl, tmpl, &key.PublicKey, key)
}

func newCA(t testing.TB, cn string, key *rsa.PrivateKey, mod func(*x509.Certificate)) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1000 + serialCounter.Add(1)),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             testNow.Add(-48 * time.Hour),
		NotAfter:              testNow.Add(10 * 365 * 24 * time.Hour),
		SignatureAlgorithm:    x509.SHA256WithRSA,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SubjectKeyId:          skid(key),
	}
	if mod != nil {
		mod(tmpl)
	}
	return create(t, tmpl, tmpl, &key.PublicKey, key)
}

// issue makes a leaf application certificate signed by ca.
func issue(t testing.TB, cn string, key *rsa.PrivateKey, ca *x509.Certificate, caKey *rsa.PrivateKey, mod func(*x509.Certificate)) *x509.Certificate {
	t.Helper()
	tmpl := appTemplate(cn, "urn:test:"+cn, key)
	if mod != nil {
		mod(tmpl)
	}
	return create(t, tmpl, ca, &key.PublicKey, caKey)
}

func create(t testing.TB, tmpl, parent *x509.Certificate, pub *rsa.PublicKey, key *rsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	require.NoError(t, err)
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return c
}

// crlOf makes a CRL of ca revoking the given certificates.
func crlOf(t testing.TB, ca *x509.Certificate, caKey *rsa.PrivateKey, revoked ...*x509.Certificate) []byte {
	t.Helper()
	tmpl := &x509.RevocationList{
		Number:     big.NewInt(serialCounter.Add(1)),
		ThisUpdate: testNow.Add(-time.Hour),
		NextUpdate: testNow.Add(30 * 24 * time.Hour),
	}
	for _, c := range revoked {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{
			SerialNumber: c.SerialNumber, RevocationTime: testNow.Add(-time.Minute),
		})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca, caKey)
	require.NoError(t, err)
	return der
}

// openTest opens a PKI in a fresh folder with the fixed clock.
func openTest(t testing.TB, opts Options) *PKI {
	t.Helper()
	keys(t)
	if opts.Now == nil {
		opts.Now = func() time.Time { return testNow }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := Open(t.TempDir(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// put writes data into one store folder of p.
func put(t testing.TB, p *PKI, dir, name string, data []byte) string {
	t.Helper()
	f := filepath.Join(p.dir(dir), name)
	require.NoError(t, os.WriteFile(f, data, 0o644))
	return f
}

func concat(certs ...*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		b.Write(c.Raw)
	}
	return b.Bytes()
}
