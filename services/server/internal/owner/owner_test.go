package owner

import (
	"crypto/x509"
	"net"
	"net/netip"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
)

func TestOwners(t *testing.T) {
	t.Parallel()
	v4 := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4840}
	mapped := &net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 50000}
	require.Equal(t, Owner{Kind: Address, ID: "192.0.2.7"}, OfAddr(v4))
	require.Equal(t, OfAddr(v4), OfAddr(mapped), "one peer, whichever way the socket shows it")
	require.Equal(t, OfIP(netip.MustParseAddr("2001:db8::1")), OfAddr(&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 1}))
	require.Equal(t, Owner{Kind: Address, ID: "192.0.2.7"}, OfAddr(&net.IPAddr{IP: net.IPv4(192, 0, 2, 7)}))
	require.True(t, OfAddr(nil).IsZero())

	require.Equal(t, "channel:42", OfChannel(42).String())
	require.Equal(t, "session:ns=1;i=5", OfSession(codec.NewNumericNodeId(1, 5)).String())
	require.Equal(t, "none", Owner{}.String())
	require.Equal(t, "kind9", Kind(9).String())

	u, _ := url.Parse("urn:acme:scada")
	o, ok := OfCertificate(&x509.Certificate{URIs: []*url.URL{u}})
	require.True(t, ok)
	require.Equal(t, "application:urn:acme:scada", o.String())
	_, ok = OfCertificate(&x509.Certificate{})
	require.False(t, ok)
	_, ok = OfCertificate(nil)
	require.False(t, ok)

	// Comparable: a map key.
	m := map[Owner]int{OfChannel(1): 1}
	m[OfChannel(1)]++
	require.Equal(t, 2, m[OfChannel(1)])
}

func TestShare(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		total    int
		fraction float64
		want     int
	}{
		{100, 0.5, 50}, {1000, 0.5, 500}, {100000, 0.5, 50000},
		{1, 0.5, 1}, {3, 0.5, 1}, {100, 1, 100}, {100, 2, 100},
		{100, 0, 100}, {0, 0.5, 0}, {7, 0.3, 2},
	} {
		require.Equal(t, c.want, Share(c.total, c.fraction), "%d × %v", c.total, c.fraction)
	}
}
