package admission

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
)

// OwnerKind says what an Owner's ID names.
type OwnerKind uint8

const (
	// noOwner is the zero Owner: no owner at all (InvalidOwner).
	noOwner OwnerKind = iota
	// OwnerIPv4 is a source address: ID holds the IPv4 address (an IPv4-mapped IPv6
	// address counts as its IPv4 address).
	OwnerIPv4
	// OwnerIPv6 is a source network: ID holds the /64 prefix of an IPv6 address. One
	// host can draw addresses from its whole /64, so a /64 is one source.
	OwnerIPv6
	// OwnerUnknownSource is a peer whose address is not IP (an in-memory connection):
	// all such peers are one owner.
	OwnerUnknownSource
	// OwnerApplication is a verified client application: ID is drawn from the SHA-256
	// of its certificate.
	OwnerApplication
	// OwnerSession is an activated session: ID is the session table's key of its
	// authentication token (session.TokenKey).
	OwnerSession
	// OwnerTrusted is a configured trusted owner: ID is its index in
	// Config.Trusted.
	OwnerTrusted
)

// Owner is who a charge is for. It is comparable and small, so that the tables key
// on it without hashing strings; it holds no address or name a log could leak.
type Owner struct {
	Kind OwnerKind
	ID   uint64
}

// IsZero reports whether o names no owner.
func (o Owner) IsZero() bool { return o.Kind == noOwner }

// Key returns o in 64 bits, for the key of a table: the kind in the top 3 bits, the
// low 61 bits of the ID below. A map of uint64 keys hashes several times faster than
// one of structs. Two owners share a key only when they differ in the top 3 bits of
// the ID alone: never for IPv4 sources, applications or trusted owners; for sessions
// one in 2⁶¹; for IPv6 networks when their prefixes differ only in the first 3 bits,
// which are 001 for all global unicast (2000::/3).
func (o Owner) Key() uint64 { return uint64(o.Kind)<<61 | o.ID&(1<<61-1) }

// SourceOf returns the owner of a peer before anything is authenticated: its IPv4
// address, or the /64 network of its IPv6 address.
func SourceOf(addr net.Addr) Owner {
	ap, ok := addrPort(addr)
	if !ok {
		return Owner{Kind: OwnerUnknownSource}
	}
	return sourceOfIP(ap.Addr())
}

// sourceOfIP is SourceOf for an IP address.
func sourceOfIP(ip netip.Addr) Owner {
	ip = ip.Unmap()
	if ip.Is4() {
		b := ip.As4()
		return Owner{Kind: OwnerIPv4, ID: uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := ip.As16()
	return Owner{Kind: OwnerIPv6, ID: binary.BigEndian.Uint64(b[:8])}
}

// addrPort returns the IP address and port of a TCP or UDP address.
func addrPort(addr net.Addr) (netip.AddrPort, bool) {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.AddrPort(), a.IP != nil
	case *net.UDPAddr:
		return a.AddrPort(), a.IP != nil
	}
	if addr == nil {
		return netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(addr.String())
	return ap, err == nil
}

// ipOf returns the IP address of addr.
func ipOf(addr net.Addr) (netip.Addr, bool) {
	ap, ok := addrPort(addr)
	return ap.Addr().Unmap(), ok
}

// ApplicationOf returns the owner of a verified client application certificate.
func ApplicationOf(cert *x509.Certificate) Owner {
	sum := sha256.Sum256(cert.Raw)
	return Owner{Kind: OwnerApplication, ID: binary.LittleEndian.Uint64(sum[:8])}
}

// SessionOwner returns the owner of the session whose authentication token has the
// table key key (session.TokenKey).
func SessionOwner(key uint64) Owner { return Owner{Kind: OwnerSession, ID: key} }

// String describes o for a log line: the source address or network, or the kind and
// a short form of the ID. A session is shown by a hash of its key, which is part of its
// authentication token.
func (o Owner) String() string {
	switch o.Kind {
	case OwnerIPv4:
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(o.ID))
		return netip.AddrFrom4(b).String()
	case OwnerIPv6:
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], o.ID)
		return netip.PrefixFrom(netip.AddrFrom16(b), 64).String()
	case OwnerUnknownSource:
		return "unknown source"
	case OwnerApplication:
		return fmt.Sprintf("application %016x", o.ID)
	case OwnerSession:
		return fmt.Sprintf("session %08x", uint32((o.ID*0x9e3779b97f4a7c15)>>32))
	case OwnerTrusted:
		return fmt.Sprintf("trusted owner %d", o.ID)
	}
	return "no owner"
}
