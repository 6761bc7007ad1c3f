package policy

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testKey is an RSA key and a self-signed certificate for it. Keys are
// generated once per test binary: RSA key generation dominates test time.
type testKey struct {
	key  *rsa.PrivateKey
	cert *x509.Certificate
}

var (
	key1024  = sync.OnceValue(func() testKey { return newTestKey(1024) })
	key2048A = sync.OnceValue(func() testKey { return newTestKey(2048) })
	key2048B = sync.OnceValue(func() testKey { return newTestKey(2048) })
	key4096  = sync.OnceValue(func() testKey { return newTestKey(4096) })
)

func newTestKey(bits int) testKey {
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(int64(bits)),
		Subject:      pkix.Name{CommonName: "uastack policy test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return testKey{key: key, cert: cert}
}

// keyPairs returns the (local, remote) key pairs a policy is tested with:
// the smallest and largest key sizes it allows, within 1024..4096.
func keyPairs(t *testing.T, p Policy) [][2]testKey {
	t.Helper()
	info := p.Info()
	var pairs [][2]testKey
	if info.MinAsymmetricKeyBits <= 1024 {
		pairs = append(pairs, [2]testKey{key1024(), key2048A()})
	}
	if info.MinAsymmetricKeyBits <= 2048 && info.MaxAsymmetricKeyBits >= 2048 {
		pairs = append(pairs, [2]testKey{key2048A(), key2048B()})
	}
	if info.MaxAsymmetricKeyBits >= 4096 {
		pairs = append(pairs, [2]testKey{key4096(), key2048A()}, [2]testKey{key2048A(), key4096()})
	}
	require.NotEmpty(t, pairs)
	return pairs
}

// rsaPolicies are the built-in policies with asymmetric algorithms.
func rsaPolicies(t *testing.T) []Policy {
	t.Helper()
	var ps []Policy
	for _, p := range All() {
		if p.Info().RSA {
			ps = append(ps, p)
		}
	}
	require.Len(t, ps, 5)
	return ps
}
