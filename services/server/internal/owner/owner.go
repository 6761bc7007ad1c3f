// Package owner names who holds a share of the server's capacity (issue 18, per-client
// isolation): a peer address or a secure channel before a client has authenticated, then
// its session or, when the client proved one, its application. Every stage that keeps
// per-client shares (connection admission, session establishment, the session table,
// the subscription engine, the request queue) keys them by an Owner, so that one client
// is one owner everywhere.
package owner

import (
	"crypto/x509"
	"math"
	"net"
	"net/netip"
	"strconv"

	"uastack.dev/pkg/codec"
)

// Kind says what an Owner names.
type Kind uint8

const (
	// Address is a peer's IP address (without the port): a client before it has
	// authenticated, as the listener sees it.
	Address Kind = iota + 1
	// Channel is a secure channel, by its id: the sessions it created and nobody has
	// activated yet, over SecurityPolicy None.
	Channel
	// Session is an activated session whose client proved no application: it owns
	// what it creates, and nobody else does.
	Session
	// Application is a client application the server verified: the ApplicationUri of
	// the client certificate of a signed channel, which the trust list accepted. Every
	// session of the application shares its shares.
	Application
)

var kindNames = [...]string{Address: "address", Channel: "channel", Session: "session", Application: "application"}

// String is the kind's name in lower case ("application"), as metrics label it.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind" + strconv.Itoa(int(k))
}

// Owner names who holds a share. It is a small comparable value: use it as a map key.
// The zero Owner is nobody.
type Owner struct {
	Kind Kind
	// ID is the address, channel id, session id or ApplicationUri, as text.
	ID string
}

// IsZero reports whether o is the zero Owner.
func (o Owner) IsZero() bool { return o == Owner{} }

// String is "kind:id" ("application:urn:acme:scada"), for logs. Owners are many: do not
// label metrics with it.
func (o Owner) String() string {
	if o.IsZero() {
		return "none"
	}
	return o.Kind.String() + ":" + o.ID
}

// OfIP is the owner of a peer address. An IPv4 address mapped into IPv6 is the IPv4
// address, so that one peer is one owner whichever way the socket shows it.
func OfIP(ip netip.Addr) Owner {
	return Owner{Kind: Address, ID: ip.Unmap().String()}
}

// OfAddr is the owner of a peer's network address: its IP address for TCP and UDP, the
// whole address otherwise.
func OfAddr(a net.Addr) Owner {
	switch a := a.(type) {
	case *net.TCPAddr:
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return OfIP(ip)
		}
	case *net.UDPAddr:
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return OfIP(ip)
		}
	}
	if a == nil {
		return Owner{}
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return OfIP(ap.Addr())
	}
	return Owner{Kind: Address, ID: a.String()}
}

// OfChannel is the owner of what secure channel id holds before activation.
func OfChannel(id uint32) Owner {
	return Owner{Kind: Channel, ID: strconv.FormatUint(uint64(id), 10)}
}

// OfSession is the owner of an activated session without a verified application.
func OfSession(id codec.NodeId) Owner {
	return Owner{Kind: Session, ID: id.String()}
}

// OfApplication is the owner of a verified client application.
func OfApplication(uri string) Owner {
	return Owner{Kind: Application, ID: uri}
}

// OfCertificate is the owner of the application of a client certificate the server has
// validated: its ApplicationUri, the first URI of its subjectAltName (Part 6 §6.2.2). ok
// is false for a certificate without one (or nil), whose client proves no application.
func OfCertificate(cert *x509.Certificate) (o Owner, ok bool) {
	if cert == nil || len(cert.URIs) == 0 {
		return Owner{}, false
	}
	return OfApplication(cert.URIs[0].String()), true
}

// Share is the most of total that one owner may hold with a share of fraction
// (0 < fraction ≤ 1): at least 1, and 0 (no limit) when total is 0 (no limit).
func Share(total int, fraction float64) int {
	if total <= 0 {
		return 0
	}
	if !(fraction > 0) || fraction >= 1 {
		return total
	}
	return max(1, int(math.Floor(float64(total)*fraction)))
}
