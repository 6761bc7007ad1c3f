package server

import (
	"net"

	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/transport/uasc"
)

// lockoutKey names the source an ActivateSession comes from, for the failed-login lockout
// (security.maxFailedAuthenticationAttempts): the thumbprint of the client application
// certificate the channel verified, or over SecurityPolicy None the peer's IP address.
// Not the user name: keyed by name, anyone could lock a known user out by failing as that
// user on purpose. Keyed by source, a client that fails locks out only itself (and,
// behind one NAT address, the clients that share it), and one that tries many names is
// stopped all the same.
func lockoutKey(ch *uasc.ServerChannel) string {
	if c := ch.ClientCertificate(); c != nil {
		return "app:" + pki.Thumbprint(c)
	}
	addr := ch.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return "ip:" + host
	}
	return "addr:" + addr
}
