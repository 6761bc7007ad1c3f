package pki

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/status"
)

// maxChainDepth bounds chain building (leaf plus issuers).
const maxChainDepth = 8

// Usage is the role a validated certificate is used for.
type Usage uint8

const (
	// UsageAny checks no extended key usage.
	UsageAny Usage = iota
	// UsageClient: the certificate belongs to a client; if it has an
	// extKeyUsage extension it must allow clientAuth.
	UsageClient
	// UsageServer: the certificate belongs to a server; if it has an
	// extKeyUsage extension it must allow serverAuth.
	UsageServer
)

// Suppress is a set of the checks that Part 4 Table 106 marks as
// suppressible. A suppressed failure is logged at debug level and ignored.
// Structure, chain, signature, trust, ApplicationUri and revocation
// (Revoked) cannot be suppressed.
type Suppress uint16

const (
	// SuppressPolicyCheck ignores BadCertificatePolicyCheckFailed (key size,
	// signature algorithm).
	SuppressPolicyCheck Suppress = 1 << iota
	// SuppressTime ignores BadCertificateTimeInvalid and
	// BadCertificateIssuerTimeInvalid.
	SuppressTime
	// SuppressHostName ignores BadCertificateHostNameInvalid.
	SuppressHostName
	// SuppressUsage ignores BadCertificateUseNotAllowed and
	// BadCertificateIssuerUseNotAllowed.
	SuppressUsage
	// SuppressRevocationUnknown ignores BadCertificateRevocationUnknown and
	// BadCertificateIssuerRevocationUnknown (a CA with no CRL in the stores).
	SuppressRevocationUnknown
)

// ValidateOptions say what a certificate is validated for.
type ValidateOptions struct {
	// ApplicationURI, when set, must appear as a URI in the leaf's
	// subjectAltName (BadCertificateUriInvalid).
	ApplicationURI string
	// Hostname, when set, must match a DNS name or IP address in the leaf's
	// subjectAltName (BadCertificateHostNameInvalid). A client sets it to
	// the host of the endpoint URL it connected to.
	Hostname string
	// Usage selects the extended key usage the leaf must allow.
	Usage Usage
	// Now is the time of the validity check; zero means the PKI's clock.
	Now time.Time
	// MinKeyBits overrides Options.MinKeyBits when positive (the minimum of
	// the SecurityPolicy in use).
	MinKeyBits int
	// AllowSHA1 accepts SHA-1 signatures for this validation (Basic128Rsa15,
	// Basic256), in addition to Options.AllowSHA1.
	AllowSHA1 bool
	// Suppress adds to Options.Suppress.
	Suppress Suppress
}

// ValidationError says why a certificate was refused. Code is the precise
// status of Part 4 §6.1.3; Message is a sentence for an operator saying what
// is wrong and what to do. errors.Is(err, Code) holds.
type ValidationError struct {
	Code       status.Code
	Subject    string // distinguished name of the certificate at fault, if parsed
	Thumbprint string // its SHA-1 thumbprint in hex, if parsed
	Message    string
	Err        error // underlying cause, if any
}

// Error returns the status name followed by the message.
func (e *ValidationError) Error() string { return e.Code.Name() + ": " + e.Message }

// Unwrap returns the status code and the underlying cause.
func (e *ValidationError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Code}
	}
	return []error{e.Code, e.Err}
}

// verified is the outcome of the expensive, option-independent steps
// (parse, chain, signatures, trust, revocation) for one exact chain
// encoding under one store generation. It is immutable except for the
// flags.
type verified struct {
	gen      uint64
	err      *ValidationError // steps 1–3 (structure, chain, signature)
	chain    []*x509.Certificate
	uris     []string // the leaf's subjectAltName URIs
	trusted  bool
	unknown  *ValidationError // step 10
	revoked  *ValidationError // step 11
	accepted atomic.Bool      // auto-accept already logged
	rejected atomic.Bool      // copy to rejected/ already queued
}

// Validate validates a peer certificate chain as OPC UA sends it (the leaf
// followed by optional issuer certificates, DER concatenated) and returns
// nil or a *ValidationError. The checks run in the order of Part 4 §6.1.3
// Table 106: structure, chain, signature, security policy, trust list,
// validity period, host name, URI, certificate usage, find revocation
// list, revocation. The first failing, non-suppressed check decides.
//
// The results of the expensive steps are cached by the exact bytes and the
// store generation, so a repeated OpenSecureChannel costs map look-ups and
// a few comparisons. der is not retained unless it is new to the cache, in
// which case a copy is kept. Safe for concurrent use.
func (p *PKI) Validate(der []byte, opts ValidateOptions) error {
	v := p.verify(der, nil)
	if err := p.check(v, &opts); err != nil {
		return err
	}
	return nil
}

// ValidateChain is Validate for parsed certificates: chain[0] is the leaf,
// the rest are issuer certificates the peer supplied.
func (p *PKI) ValidateChain(chain []*x509.Certificate, opts ValidateOptions) error {
	if len(chain) == 0 {
		return &ValidationError{Code: status.BadCertificateInvalid, Message: "no certificate was provided"}
	}
	v := p.verify(chainKey(chain), chain)
	if err := p.check(v, &opts); err != nil {
		return err
	}
	return nil
}

// IsTrusted reports whether cert (with the issuer certificates the peer
// supplied) still chains to the trust list and is not revoked. The secure
// channel layer calls it from an OnTrustChange callback to find channels to
// close. Time, usage and policy are not re-checked here.
func (p *PKI) IsTrusted(cert *x509.Certificate, intermediates ...*x509.Certificate) bool {
	if cert == nil {
		return false
	}
	chain := append([]*x509.Certificate{cert}, intermediates...)
	v := p.verify(chainKey(chain), chain)
	return v.err == nil && v.revoked == nil && (v.trusted || p.opts.AutoAccept)
}

func chainKey(chain []*x509.Certificate) []byte {
	if len(chain) == 1 {
		return chain[0].Raw
	}
	var n int
	for _, c := range chain {
		n += len(c.Raw)
	}
	key := make([]byte, 0, n)
	for _, c := range chain {
		key = append(key, c.Raw...)
	}
	return key
}

// verify returns the cached outcome for key under the current generation,
// computing it if needed.
func (p *PKI) verify(key []byte, parsed []*x509.Certificate) *verified {
	st := p.st.Load()
	v := (*p.cache.Load())[string(key)]
	if v != nil && v.gen == st.gen {
		return v
	}
	v = p.build(st, key, parsed)
	p.cacheMu.Lock()
	old := *p.cache.Load()
	n := len(old) + 1
	if n > p.opts.CacheSize {
		old, n = nil, 1 // start over rather than track recency
	}
	next := make(map[string]*verified, n)
	for k, e := range old {
		if e.gen == st.gen {
			next[k] = e
		}
	}
	next[string(key)] = v
	p.cache.Store(&next)
	p.cacheMu.Unlock()
	return v
}

// clearCache drops every cached outcome.
func (p *PKI) clearCache() {
	p.cacheMu.Lock()
	empty := map[string]*verified{}
	p.cache.Store(&empty)
	p.cacheMu.Unlock()
}

// build runs steps 1–3 and precomputes trust (5) and revocation (10, 11).
func (p *PKI) build(st *snapshot, der []byte, certs []*x509.Certificate) *verified {
	v := &verified{gen: st.gen}
	// Step 1: certificate structure.
	if certs == nil {
		var err error
		certs, err = x509.ParseCertificates(der)
		if err != nil {
			v.err = &ValidationError{Code: status.BadCertificateInvalid, Err: err,
				Message: fmt.Sprintf("the certificate could not be parsed (%v): the peer sent a malformed certificate", err)}
			return v
		}
	}
	if len(certs) == 0 {
		v.err = &ValidationError{Code: status.BadCertificateInvalid, Message: "no certificate was provided"}
		return v
	}
	leaf := certs[0]
	v.chain = certs[:1]
	for _, u := range leaf.URIs {
		v.uris = append(v.uris, u.String())
	}
	if leaf.Version != 3 {
		v.err = newErr(status.BadCertificateInvalid, leaf, "certificate %s is X.509 version %d; OPC UA requires version 3 (Part 6 §6.2.2): reissue it", describe(leaf), leaf.Version)
		return v
	}
	// Steps 2 and 3: build the chain through the supplied, issuer and
	// trusted certificates, verifying each signature on the way.
	chain, verr := st.buildChain(p, certs)
	v.chain = chain
	if verr != nil {
		v.err = verr
		return v
	}
	for _, c := range chain {
		if st.trusted[string(c.Raw)] {
			v.trusted = true
			break
		}
	}
	v.unknown, v.revoked = st.revocation(p, chain)
	return v
}

func (st *snapshot) buildChain(p *PKI, certs []*x509.Certificate) ([]*x509.Certificate, *ValidationError) {
	chain := []*x509.Certificate{certs[0]}
	for {
		cur := chain[len(chain)-1]
		if isSelfIssued(cur) {
			if err := cur.CheckSignature(cur.SignatureAlgorithm, cur.RawTBSCertificate, cur.Signature); err != nil {
				return chain, newErrCause(status.BadCertificateInvalid, cur, err,
					"the self-signature of certificate %s does not verify (%v): the certificate is corrupt or forged", describe(cur), err)
			}
			return chain, nil
		}
		if len(chain) >= maxChainDepth {
			return chain, newErr(status.BadCertificateChainIncomplete, certs[0],
				"the chain of certificate %s is longer than %d certificates: use a shorter CA hierarchy", describe(certs[0]), maxChainDepth)
		}
		var parent *x509.Certificate
		var sigErr error
		try := func(c *x509.Certificate) bool {
			if !bytes.Equal(c.RawSubject, cur.RawIssuer) || inChain(chain, c) {
				return false
			}
			if len(cur.AuthorityKeyId) > 0 && len(c.SubjectKeyId) > 0 && !bytes.Equal(cur.AuthorityKeyId, c.SubjectKeyId) {
				return false
			}
			if err := c.CheckSignature(cur.SignatureAlgorithm, cur.RawTBSCertificate, cur.Signature); err != nil {
				sigErr = err
				return false
			}
			parent = c
			return true
		}
		found := false
		for _, c := range st.subject[string(cur.RawIssuer)] {
			if found = try(c); found {
				break
			}
		}
		for _, c := range certs[1:] {
			if found {
				break
			}
			found = try(c)
		}
		if !found {
			if sigErr != nil {
				return chain, newErrCause(status.BadCertificateInvalid, cur, sigErr,
					"the signature of certificate %s does not verify with the key of its issuer %q (%v): the certificate is corrupt or forged, or the issuer certificate in the stores is a different one with the same name",
					describe(cur), cur.Issuer.String(), sigErr)
			}
			return chain, newErr(status.BadCertificateChainIncomplete, cur,
				"certificate %s was issued by %q, which is in neither %s nor %s: add that CA certificate to %s to complete the chain (or to %s to trust everything it issues)",
				describe(cur), cur.Issuer.String(), p.dir(dirIssuerCerts), p.dir(dirTrustedCerts), p.dir(dirIssuerCerts), p.dir(dirTrustedCerts))
		}
		chain = append(chain, parent)
	}
}

func isSelfIssued(c *x509.Certificate) bool {
	if !bytes.Equal(c.RawIssuer, c.RawSubject) {
		return false
	}
	return len(c.AuthorityKeyId) == 0 || len(c.SubjectKeyId) == 0 || bytes.Equal(c.AuthorityKeyId, c.SubjectKeyId)
}

func inChain(chain []*x509.Certificate, c *x509.Certificate) bool {
	for _, o := range chain {
		if bytes.Equal(o.Raw, c.Raw) {
			return true
		}
	}
	return false
}

// revocation finds, for each certificate issued by a CA, a CRL of that CA
// (signed by it) in trusted/crl or issuer/crl, and looks the serial up.
func (st *snapshot) revocation(p *PKI, chain []*x509.Certificate) (unknown, revoked *ValidationError) {
	for i := 0; i+1 < len(chain); i++ {
		c, issuer := chain[i], chain[i+1]
		have := false
		for _, crl := range st.crls[string(issuer.RawSubject)] {
			if crl.CheckSignatureFrom(issuer) != nil {
				continue
			}
			have = true
			for _, e := range crl.RevokedCertificateEntries {
				if revoked == nil && e.SerialNumber.Cmp(c.SerialNumber) == 0 {
					code := status.BadCertificateRevoked
					if i > 0 {
						code = status.BadCertificateIssuerRevoked
					}
					revoked = newErr(code, c,
						"certificate %s (serial %X) was revoked on %s by its CA %q: it must not be used; the peer needs a new certificate",
						describe(c), c.SerialNumber, e.RevocationTime.UTC().Format(time.RFC3339), issuer.Subject.String())
				}
			}
		}
		if !have && unknown == nil {
			code := status.BadCertificateRevocationUnknown
			if i > 0 {
				code = status.BadCertificateIssuerRevocationUnknown
			}
			unknown = newErr(code, c,
				"no CRL of CA %q was found in %s or %s, so whether certificate %s is revoked is unknown: put the CA's current CRL there (an empty one if it revoked nothing), or suppress this check with SuppressRevocationUnknown",
				issuer.Subject.String(), p.dir(dirTrustedCRL), p.dir(dirIssuerCRL), describe(c))
		}
	}
	return unknown, revoked
}

// check runs steps 4–11 on a verified chain.
func (p *PKI) check(v *verified, o *ValidateOptions) *ValidationError {
	if v.err != nil {
		return p.fail(v, v.err)
	}
	sup := p.opts.Suppress | o.Suppress
	chain := v.chain
	leaf := chain[0]
	now := o.Now
	if now.IsZero() {
		now = p.opts.Now()
	}
	minBits := p.opts.MinKeyBits
	if o.MinKeyBits > 0 {
		minBits = o.MinKeyBits
	}
	// Step 4: security policy check.
	if e := p.suppressible(policyCheck(chain, minBits, p.opts.AllowSHA1 || o.AllowSHA1), sup&SuppressPolicyCheck != 0); e != nil {
		return p.fail(v, e)
	}
	// Step 5: trust list check.
	if !v.trusted {
		if !p.opts.AutoAccept {
			return p.fail(v, p.untrusted(chain))
		}
		if v.accepted.CompareAndSwap(false, true) {
			p.log.Warn("pki: AutoAccept: accepting untrusted certificate", "subject", leaf.Subject.String(), "thumbprint", Thumbprint(leaf))
		}
	}
	// Step 6: validity period.
	if e := p.suppressible(timeCheck(chain, now), sup&SuppressTime != 0); e != nil {
		return p.fail(v, e)
	}
	// Step 7: host name.
	if o.Hostname != "" {
		if err := leaf.VerifyHostname(o.Hostname); err != nil {
			e := newErrCause(status.BadCertificateHostNameInvalid, leaf, err,
				"certificate %s is not valid for host %q: its subjectAltName lists DNS names %q and IP addresses %v; connect using one of those or reissue the certificate with %q",
				describe(leaf), o.Hostname, leaf.DNSNames, leaf.IPAddresses, o.Hostname)
			if e = p.suppressible(e, sup&SuppressHostName != 0); e != nil {
				return p.fail(v, e)
			}
		}
	}
	// Step 8: ApplicationUri.
	if o.ApplicationURI != "" && !slices.Contains(v.uris, o.ApplicationURI) {
		return p.fail(v, newErr(status.BadCertificateUriInvalid, leaf,
			"certificate %s carries the ApplicationUri %q in its subjectAltName, but the application says its ApplicationUri is %q: they must be equal; correct the application's configuration or reissue the certificate",
			describe(leaf), v.uris, o.ApplicationURI))
	}
	// Step 9: certificate usage.
	if e := p.suppressible(usageCheck(chain, o.Usage), sup&SuppressUsage != 0); e != nil {
		return p.fail(v, e)
	}
	// Step 10: find revocation list.
	if e := p.suppressible(v.unknown, sup&SuppressRevocationUnknown != 0); e != nil {
		return p.fail(v, e)
	}
	// Step 11: revocation check.
	if v.revoked != nil {
		return p.fail(v, v.revoked)
	}
	return nil
}

// suppressible returns nil for a suppressed failure, logging it at debug
// level.
func (p *PKI) suppressible(e *ValidationError, suppressed bool) *ValidationError {
	if e == nil || !suppressed {
		return e
	}
	if p.debugEnabled() {
		p.log.Debug("pki: suppressed certificate check", "code", e.Code.Name(), "reason", e.Message)
	}
	return nil
}

// fail queues a copy of an untrusted leaf for rejected/certs (unless
// AutoAccept trusts everything) and returns e.
func (p *PKI) fail(v *verified, e *ValidationError) *ValidationError {
	if !v.trusted && !p.opts.AutoAccept && len(v.chain) > 0 && v.rejected.CompareAndSwap(false, true) {
		p.rejected.enqueue(v.chain[0])
	}
	return e
}

func (p *PKI) untrusted(chain []*x509.Certificate) *ValidationError {
	leaf := chain[0]
	rejected := filepath.Join(p.dir(dirRejectedCerts), fileName(leaf))
	if len(chain) == 1 {
		return newErr(status.BadCertificateUntrusted, leaf,
			"certificate %s is not trusted: copy %s to %s to trust it, then call Reload (or wait for the store poll)",
			describe(leaf), rejected, p.dir(dirTrustedCerts))
	}
	return newErr(status.BadCertificateUntrusted, leaf,
		"certificate %s, issued by %q, is not trusted: copy %s to %s to trust this certificate, or put the certificate of %q there to trust everything it issues; then call Reload (or wait for the store poll)",
		describe(leaf), leaf.Issuer.String(), rejected, p.dir(dirTrustedCerts), chain[len(chain)-1].Subject.String())
}

func policyCheck(chain []*x509.Certificate, minBits int, allowSHA1 bool) *ValidationError {
	for i, c := range chain {
		if pk, ok := c.PublicKey.(*rsa.PublicKey); ok && pk.N.BitLen() < minBits {
			return newErr(status.BadCertificatePolicyCheckFailed, c,
				"certificate %s has a %d-bit RSA key but at least %d bits are required: reissue it with a larger key (or lower MinKeyBits only for peers that must use Basic128Rsa15 or Basic256)",
				describe(c), pk.N.BitLen(), minBits)
		}
		anchor := i > 0 && i == len(chain)-1 // a root's self-signature is not relied upon
		if !anchor && !allowSHA1 && isSHA1(c.SignatureAlgorithm) {
			return newErr(status.BadCertificatePolicyCheckFailed, c,
				"certificate %s is signed with %v, which is no longer accepted: reissue it with SHA-256 (or set AllowSHA1 only for peers that must use Basic128Rsa15 or Basic256)",
				describe(c), c.SignatureAlgorithm)
		}
	}
	return nil
}

func isSHA1(a x509.SignatureAlgorithm) bool {
	return a == x509.SHA1WithRSA || a == x509.ECDSAWithSHA1 || a == x509.DSAWithSHA1
}

func timeCheck(chain []*x509.Certificate, now time.Time) *ValidationError {
	for i, c := range chain {
		if !now.Before(c.NotBefore) && !now.After(c.NotAfter) {
			continue
		}
		if i == 0 {
			return newErr(status.BadCertificateTimeInvalid, c,
				"certificate %s is valid from %s to %s but the time is %s: renew the certificate (or correct this machine's clock if it is wrong)",
				describe(c), c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
		return newErr(status.BadCertificateIssuerTimeInvalid, c,
			"issuer certificate %s of %s is valid from %s to %s but the time is %s: renew the CA certificate (or correct this machine's clock if it is wrong)",
			describe(c), describe(chain[0]), c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

func usageCheck(chain []*x509.Certificate, usage Usage) *ValidationError {
	leaf := chain[0]
	const encipher = x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment
	switch {
	case leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0:
		return newErr(status.BadCertificateUseNotAllowed, leaf,
			"certificate %s does not allow digitalSignature in its keyUsage, which OPC UA needs to sign messages (Part 6 §6.2.2): reissue it as an application instance certificate", describe(leaf))
	case isRSA(leaf) && leaf.KeyUsage&encipher == 0:
		return newErr(status.BadCertificateUseNotAllowed, leaf,
			"certificate %s allows neither keyEncipherment nor dataEncipherment in its keyUsage, which OPC UA needs to encrypt to it (Part 6 §6.2.2): reissue it as an application instance certificate", describe(leaf))
	case len(chain) > 1 && leaf.IsCA:
		return newErr(status.BadCertificateUseNotAllowed, leaf,
			"certificate %s is a CA certificate and cannot be used as an application instance certificate: reissue it with cA=false", describe(leaf))
	}
	if usage != UsageAny && (len(leaf.ExtKeyUsage) > 0 || len(leaf.UnknownExtKeyUsage) > 0) {
		want, role := x509.ExtKeyUsageClientAuth, "clientAuth"
		if usage == UsageServer {
			want, role = x509.ExtKeyUsageServerAuth, "serverAuth"
		}
		ok := false
		for _, u := range leaf.ExtKeyUsage {
			if u == want || u == x509.ExtKeyUsageAny {
				ok = true
			}
		}
		if !ok {
			return newErr(status.BadCertificateUseNotAllowed, leaf,
				"certificate %s does not allow %s in its extKeyUsage: reissue it with %s (application certificates normally carry both serverAuth and clientAuth)", describe(leaf), role, role)
		}
	}
	for _, c := range chain[1:] {
		if !c.BasicConstraintsValid || !c.IsCA || (c.KeyUsage != 0 && c.KeyUsage&x509.KeyUsageCertSign == 0) {
			return newErr(status.BadCertificateIssuerUseNotAllowed, c,
				"issuer certificate %s of %s is not a CA certificate allowed to sign certificates (it needs basicConstraints cA=true and keyUsage keyCertSign): fix the CA certificate",
				describe(c), describe(leaf))
		}
	}
	return nil
}

func isRSA(c *x509.Certificate) bool {
	_, ok := c.PublicKey.(*rsa.PublicKey)
	return ok
}

func (p *PKI) dir(d string) string { return filepath.Join(p.root, filepath.FromSlash(d)) }

// describe names a certificate for a message: its subject and thumbprint.
func describe(c *x509.Certificate) string {
	return fmt.Sprintf("%q (thumbprint %s)", c.Subject.String(), Thumbprint(c))
}

func newErr(code status.Code, c *x509.Certificate, format string, args ...any) *ValidationError {
	return newErrCause(code, c, nil, format, args...)
}

func newErrCause(code status.Code, c *x509.Certificate, cause error, format string, args ...any) *ValidationError {
	e := &ValidationError{Code: code, Err: cause, Message: fmt.Sprintf(format, args...)}
	if c != nil {
		e.Subject = c.Subject.String()
		e.Thumbprint = Thumbprint(c)
	}
	return e
}
