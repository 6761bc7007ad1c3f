package pki

import (
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultOwnValidityMonths is the lifetime of a created application
// instance certificate: 12 calendar months, the .NET stack's
// CertificateFactory.DefaultLifeTime for application certificates. Short
// enough that a stolen key expires, long enough that nobody renews by hand
// every few weeks.
const DefaultOwnValidityMonths = 12

// Key sizes accepted by [PKI.EnsureOwn] (the RSA policies of Part 7 accept
// 2048 to 4096 bits).
const (
	DefaultOwnKeyBits = 2048
	MinOwnKeyBits     = 2048
	MaxOwnKeyBits     = 4096
)

// OwnOptions configure the application instance certificate that
// [PKI.EnsureOwn] creates.
type OwnOptions struct {
	// ApplicationName becomes the subject CN; default the host part of the
	// ApplicationUri, or "uastack".
	ApplicationName string
	// Organization is added to the subject as O when set.
	Organization string
	// KeyBits is the RSA modulus size, 2048 (default) to 4096.
	KeyBits int
	// Validity is the lifetime; default DefaultOwnValidityMonths. The certificate
	// starts one hour in the past to tolerate clock skew between peers.
	Validity time.Duration
	// Key, when set, is used instead of generating a new key (tests, or a
	// key held elsewhere).
	Key *rsa.PrivateKey
}

type ownPair struct {
	cert *x509.Certificate
	key  *rsa.PrivateKey
}

// Own returns the application instance certificate and its private key, or
// nils before [PKI.EnsureOwn] succeeded. The caller must not modify them.
func (p *PKI) Own() (*x509.Certificate, *rsa.PrivateKey) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.own == nil {
		return nil, nil
	}
	return p.own.cert, p.own.key
}

// EnsureOwn loads the application instance certificate for applicationURI
// from own/certs (with its key from own/private) or, on first start or when
// the stored one has expired, creates one (Part 6 §6.2.2): an RSA key and a
// self-signed X.509 v3 certificate signed with SHA-256 whose subjectAltName
// holds the ApplicationUri and the given DNS names and IP addresses;
// keyUsage digitalSignature, nonRepudiation, keyEncipherment,
// dataEncipherment and keyCertSign; extKeyUsage serverAuth and clientAuth;
// basicConstraints cA=false; subject and issuer equal; subject and
// authority key identifiers equal. The key is written as PKCS#8 PEM with
// mode 0600, the certificate as DER.
func (p *PKI) EnsureOwn(applicationURI string, hosts []string, opts OwnOptions) (*x509.Certificate, *rsa.PrivateKey, error) {
	if applicationURI == "" {
		return nil, nil, errors.New("pki: EnsureOwn needs an ApplicationUri")
	}
	uri, err := url.Parse(applicationURI)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: ApplicationUri %q: %w", applicationURI, err)
	}
	if opts.KeyBits == 0 {
		opts.KeyBits = DefaultOwnKeyBits
	}
	if opts.KeyBits < MinOwnKeyBits || opts.KeyBits > MaxOwnKeyBits {
		return nil, nil, fmt.Errorf("pki: key size %d bits is outside %d–%d", opts.KeyBits, MinOwnKeyBits, MaxOwnKeyBits)
	}
	now := p.opts.Now()
	notAfter := now.AddDate(0, DefaultOwnValidityMonths, 0)
	if opts.Validity > 0 {
		notAfter = now.Add(opts.Validity)
	}
	if cert, key, ok := p.loadOwn(applicationURI, now); ok {
		p.setOwn(cert, key)
		return cert, key, nil
	}
	key := opts.Key
	if key == nil {
		key, err = rsa.GenerateKey(p.opts.Rand, opts.KeyBits)
		if err != nil {
			return nil, nil, fmt.Errorf("pki: generate key: %w", err)
		}
	}
	serial, err := randomSerial(p)
	if err != nil {
		return nil, nil, err
	}
	name := opts.ApplicationName
	if name == "" {
		name = uri.Hostname()
		if name == "" {
			name = uri.Opaque
		}
		if name == "" {
			name = "uastack"
		}
	}
	subject := pkix.Name{CommonName: name}
	if opts.Organization != "" {
		subject.Organization = []string{opts.Organization}
	}
	var dns []string
	var ips []net.IP
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else if h != "" {
			dns = append(dns, h)
		}
	}
	if len(dns) > 0 {
		subject.ExtraNames = append(subject.ExtraNames, pkix.AttributeTypeAndValue{
			Type: []int{0, 9, 2342, 19200300, 100, 1, 25}, Value: dns[0], // DC=<host>, as the .NET stack does
		})
	}
	skid := sha1.Sum(x509.MarshalPKCS1PublicKey(&key.PublicKey)) // RFC 5280 §4.2.1.2 method 1
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             now.Add(-time.Hour).UTC().Truncate(time.Second),
		NotAfter:              notAfter.UTC().Truncate(time.Second),
		SignatureAlgorithm:    x509.SHA256WithRSA,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  false,
		SubjectKeyId:          skid[:],
		AuthorityKeyId:        skid[:],
		URIs:                  []*url.URL{uri},
		DNSNames:              dns,
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(p.opts.Rand, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: create certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: parse created certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: encode key: %w", err)
	}
	base := strings.TrimSuffix(fileName(cert), ".der")
	keyFile := filepath.Join(p.root, filepath.FromSlash(dirOwnPrivate), base+".pem")
	if err := writeFileAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		return nil, nil, fmt.Errorf("pki: write private key: %w", err)
	}
	certFile := filepath.Join(p.root, filepath.FromSlash(dirOwnCerts), base+".der")
	if err := writeFileAtomic(certFile, der, 0o644); err != nil {
		return nil, nil, fmt.Errorf("pki: write certificate: %w", err)
	}
	p.log.Info("pki: created application instance certificate", "file", certFile, "uri", applicationURI, "thumbprint", Thumbprint(cert), "notAfter", cert.NotAfter)
	p.setOwn(cert, key)
	return cert, key, nil
}

func (p *PKI) setOwn(cert *x509.Certificate, key *rsa.PrivateKey) {
	p.mu.Lock()
	p.own = &ownPair{cert: cert, key: key}
	p.mu.Unlock()
}

// loadOwn finds the newest usable certificate for uri in own/certs whose
// key is in own/private under the same base name.
func (p *PKI) loadOwn(uri string, now time.Time) (*x509.Certificate, *rsa.PrivateKey, bool) {
	var best *x509.Certificate
	var bestKey *rsa.PrivateKey
	_ = p.eachFile(dirOwnCerts, func(name string, data []byte) {
		certs, err := parseCertificates(data)
		if err != nil || len(certs) == 0 {
			p.log.Warn("pki: skipping unreadable own certificate", "file", name, "err", err)
			return
		}
		c := certs[0]
		if !hasURI(c, uri) {
			return
		}
		if now.After(c.NotAfter) {
			p.log.Warn("pki: own certificate has expired; a new one will be created", "file", name, "notAfter", c.NotAfter)
			return
		}
		base := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
		key, err := readKey(filepath.Join(p.root, filepath.FromSlash(dirOwnPrivate), base+".pem"))
		if err != nil {
			p.log.Warn("pki: own certificate has no usable private key", "file", name, "err", err)
			return
		}
		if !key.PublicKey.Equal(c.PublicKey) {
			p.log.Warn("pki: own private key does not match certificate", "file", name)
			return
		}
		if best == nil || c.NotAfter.After(best.NotAfter) {
			best, bestKey = c, key
		}
	})
	return best, bestKey, best != nil
}

func readKey(name string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM block")
	}
	switch b.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, err
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("key is %T, not RSA", k)
		}
		return rk, nil
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(b.Bytes)
	}
	return nil, fmt.Errorf("unexpected PEM block %q", b.Type)
}

func randomSerial(p *PKI) (*big.Int, error) {
	var b [16]byte
	if _, err := io.ReadFull(p.opts.Rand, b[:]); err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	b[0] &= 0x7f
	b[0] |= 0x40 // positive and 16 bytes long
	return new(big.Int).SetBytes(b[:]), nil
}

func hasURI(c *x509.Certificate, uri string) bool {
	for _, u := range c.URIs {
		if u.String() == uri {
			return true
		}
	}
	return false
}
