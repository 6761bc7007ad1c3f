package pki

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkValidate measures the validation that runs on every
// OpenSecureChannel: a leaf issued by a trusted CA (with its CRL), sent
// as leaf+CA the way OPC UA sends a chain. "cached" is a repeated channel
// from the same peer; "uncached" clears the cache each time (first
// contact, or after a store change): parse, two signature checks and a
// CRL signature check.
func BenchmarkValidate(b *testing.B) {
	keys(b)
	ca := newCA(b, "Bench CA", keyCA, nil)
	leaf := issue(b, "bench", keyPeer, ca, keyCA, nil)
	p := openTest(b, Options{})
	put(b, p, dirTrustedCerts, "ca.der", ca.Raw)
	put(b, p, dirTrustedCRL, "ca.crl", crlOf(b, ca, keyCA))
	require.NoError(b, p.Reload())
	der := concat(leaf, ca)
	opts := ValidateOptions{ApplicationURI: "urn:test:bench", Usage: UsageClient}
	require.NoError(b, p.Validate(der, opts))

	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(der)))
		for b.Loop() {
			if err := p.Validate(der, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(der)))
		for b.Loop() {
			p.clearCache()
			if err := p.Validate(der, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := p.Validate(der, opts); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
