package server

import (
	"crypto/sha1"
	"encoding/hex"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// lockoutKey names the client an ActivateSession comes from: the thumbprint of the
// channel's client application certificate, else (SecurityPolicy None) the user name of a
// UserNameIdentityToken or the SHA-1 of the certificate of an X509IdentityToken. The
// secure channel does not expose the connection's remote address, so it cannot be the
// key. An empty key (anonymous on None) is not counted.
func lockoutKey(ch *uasc.ServerChannel, tok codec.ExtensionObject) string {
	if c := ch.ClientCertificate(); c != nil {
		return "app:" + pki.Thumbprint(c)
	}
	switch t := tok.Value.(type) {
	case *ua.UserNameIdentityToken:
		return "user:" + t.UserName
	case *ua.X509IdentityToken:
		sum := sha1.Sum(t.CertificateData)
		return "x509:" + hex.EncodeToString(sum[:])
	}
	return ""
}
