package server

import (
	"crypto/x509"
	"errors"
	"slices"

	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// policyIDCertificate is the policy id of the X509IdentityToken policy the server offers
// (Part 4 §7.42).
const policyIDCertificate = "Certificate"

// identifyX509 checks an X509IdentityToken (Part 4 §7.41.5) and its userTokenSignature
// (Part 4 §5.6.3.2): the signature over ServerCertificate || the last server nonce is
// made with the user's key under the token policy's SecurityPolicy (the channel's when
// the policy names none), and the user certificate must pass the server's PKI as a
// client certificate.
//
// Status codes (Part 4 §5.6.3.3 Table 18 and §7.34 Table 177):
//   - no such token policy, certificate not parseable: BadIdentityTokenInvalid;
//   - signature missing, wrong algorithm or not verifying: BadUserSignatureInvalid;
//   - effective SecurityPolicy None (no proof of possession is possible), a key outside
//     the policy's limits, a certificate the PKI refuses (untrusted, expired, revoked,
//     wrong usage): BadIdentityTokenRejected ("valid but the server has rejected it").
//
// AutoAcceptUntrusted is for application instance certificates only: while it is on, the
// PKI would accept any user certificate too, so every X509IdentityToken is rejected.
func (s *Server) identifyX509(ch *uasc.ServerChannel, t *ua.X509IdentityToken, sig ua.SignatureData, nonce []byte) (nodemgr.Principal, status.Code) {
	p, ok := s.tokenPolicy(t.PolicyId, ua.UserTokenTypeCertificate)
	if !ok {
		return nodemgr.Principal{}, status.BadIdentityTokenInvalid
	}
	chain, err := x509.ParseCertificates(t.CertificateData)
	if err != nil || len(chain) == 0 {
		return nodemgr.Principal{}, status.BadIdentityTokenInvalid
	}
	leaf := chain[0]
	uri := p.SecurityPolicyUri
	if uri == "" {
		uri = ch.SecurityPolicyURI()
	}
	if uri == policy.URINone {
		return nodemgr.Principal{}, status.BadIdentityTokenRejected
	}
	pol, ok := policy.Lookup(uri)
	if !ok {
		return nodemgr.Principal{}, status.BadIdentityTokenRejected
	}
	asym, err := pol.NewAsymmetric(nil, leaf)
	if err != nil {
		return nodemgr.Principal{}, status.BadIdentityTokenRejected
	}
	data := append(append(make([]byte, 0, len(s.cert.Raw)+len(nonce)), s.cert.Raw...), nonce...)
	if len(sig.Signature) == 0 || sig.Algorithm != pol.Info().AsymmetricSignatureURI ||
		asym.Verify(data, sig.Signature) != nil {
		return nodemgr.Principal{}, status.BadUserSignatureInvalid
	}
	if s.cfg.Security.AutoAcceptUntrusted {
		s.log.Warn("X509 identity token rejected: security.autoAcceptUntrusted is on and applies to application certificates only",
			"thumbprint", pki.Thumbprint(leaf))
		return nodemgr.Principal{}, status.BadIdentityTokenRejected
	}
	// The PKI's usage check is the one of application instance certificates, which
	// also demands keyEncipherment; a user certificate only signs, so usage is checked
	// by userCertificateUsage instead.
	if err := userCertificateUsage(chain); err != nil {
		s.log.Warn("user certificate rejected", "thumbprint", pki.Thumbprint(leaf), "err", err)
		return nodemgr.Principal{}, status.BadIdentityTokenRejected
	}
	opts := pki.ValidateOptions{Usage: pki.UsageClient, MinKeyBits: pol.Info().MinAsymmetricKeyBits, Suppress: pki.SuppressUsage}
	if err := s.pki.ValidateChain(chain, opts); err != nil {
		// The message names the certificate and, for an untrusted one, the file to move.
		s.log.Warn("user certificate rejected", "err", err)
		return nodemgr.Principal{}, status.BadIdentityTokenRejected
	}
	return nodemgr.Principal{Thumbprint: pki.Thumbprint(leaf)}, status.Good
}

// userCertificateUsage checks the key usage of a user certificate chain (leaf first): the
// leaf, when it restricts its key usage, allows digitalSignature, and when it has an
// extKeyUsage, allows clientAuth; every supplied issuer is a CA allowed to sign
// certificates.
func userCertificateUsage(chain []*x509.Certificate) error {
	leaf := chain[0]
	if leaf.KeyUsage != 0 && leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return errors.New("keyUsage does not allow digitalSignature")
	}
	if len(leaf.ExtKeyUsage) > 0 || len(leaf.UnknownExtKeyUsage) > 0 {
		if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny) {
			return errors.New("extKeyUsage does not allow clientAuth")
		}
	}
	for _, c := range chain[1:] {
		if !c.BasicConstraintsValid || !c.IsCA || (c.KeyUsage != 0 && c.KeyUsage&x509.KeyUsageCertSign == 0) {
			return errors.New("an issuer certificate is not a CA allowed to sign certificates")
		}
	}
	return nil
}
