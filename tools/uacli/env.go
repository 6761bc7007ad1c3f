package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// globals are the flags every command accepts.
type globals struct {
	url      string
	policy   string
	mode     string
	user     string
	password string
	certFile string
	keyFile  string
	pkiDir   string
	timeout  time.Duration
	json     bool
}

func defaultGlobals() *globals {
	return &globals{url: "opc.tcp://localhost:4840", pkiDir: defaultPKIDir(), timeout: 10 * time.Second}
}

// defaultPKIDir is uastack/uacli-pki under os.UserConfigDir(), or uacli-pki in the
// working directory when there is none.
func defaultPKIDir() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "uacli-pki"
	}
	return filepath.Join(dir, "uastack", "uacli-pki")
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.url, "url", g.url, "server endpoint URL")
	fs.StringVar(&g.policy, "policy", g.policy, "SecurityPolicy: None, Basic256Sha256, Aes256_Sha256_RsaPss, ... or a URI (default: the most secure offered)")
	fs.StringVar(&g.mode, "mode", g.mode, "MessageSecurityMode: None, Sign or SignAndEncrypt (default: SignAndEncrypt, None with --policy None)")
	fs.StringVar(&g.user, "user", g.user, "user name for a UserNameIdentityToken")
	fs.StringVar(&g.password, "password", g.password, "password (default $UASTACK_PASSWORD, which keeps it out of shell history)")
	fs.StringVar(&g.certFile, "cert", g.certFile, "user certificate (DER or PEM) for an X509IdentityToken")
	fs.StringVar(&g.keyFile, "key", g.keyFile, "private key (PEM) of --cert")
	fs.StringVar(&g.pkiDir, "pki", g.pkiDir, "uacli's certificate stores (own, trusted, rejected)")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "timeout of connecting and of each request")
	fs.BoolVar(&g.json, "json", g.json, "write one JSON document instead of text")
}

// securityPolicyURI resolves a short policy name ("Basic256Sha256") or a URI; ""
// stays "" (the client picks the most secure).
func securityPolicyURI(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	for _, p := range policy.All() {
		if in := p.Info(); strings.EqualFold(name, in.Name) || name == in.URI {
			return in.URI, nil
		}
	}
	names := make([]string, 0, len(policy.All()))
	for _, p := range policy.All() {
		names = append(names, p.Info().Name)
	}
	return "", usagef("unknown --policy %q (one of %s)", name, strings.Join(names, ", "))
}

// policyName returns the short name of a policy URI.
func policyName(uri string) string {
	if p, ok := policy.Lookup(uri); ok {
		return p.Info().Name
	}
	if _, frag, ok := strings.Cut(uri, "#"); ok {
		return frag
	}
	return uri
}

func securityMode(name, policyURI string) (ua.MessageSecurityMode, error) {
	switch strings.ToLower(name) {
	case "":
		if policyURI == policy.URINone {
			return ua.MessageSecurityModeNone, nil
		}
		return ua.MessageSecurityModeSignAndEncrypt, nil
	case "none":
		return ua.MessageSecurityModeNone, nil
	case "sign":
		return ua.MessageSecurityModeSign, nil
	case "signandencrypt":
		return ua.MessageSecurityModeSignAndEncrypt, nil
	}
	return 0, usagef("unknown --mode %q (None, Sign or SignAndEncrypt)", name)
}

// modeName returns the short name of a mode: "SignAndEncrypt", not "SignAndEncrypt_3".
func modeName(m ua.MessageSecurityMode) string {
	switch m {
	case ua.MessageSecurityModeNone:
		return "None"
	case ua.MessageSecurityModeSign:
		return "Sign"
	case ua.MessageSecurityModeSignAndEncrypt:
		return "SignAndEncrypt"
	}
	return fmt.Sprintf("Invalid(%d)", int32(m))
}

// env is what a running command works with: the flags, the output and, once
// dialled, the session. It is used by one goroutine.
type env struct {
	g      *globals
	stdout io.Writer
	stderr io.Writer

	store *pki.PKI
	own   *x509.Certificate
	c     *client.Client
	nsURI []string // the server's NamespaceArray, read on first need
}

// openPKI opens uacli's stores, creating the application instance certificate on
// first use.
func (e *env) openPKI() (*pki.PKI, error) {
	if e.store != nil {
		return e.store, nil
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p, err := pki.Open(e.g.pkiDir, pki.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	e.store = p
	return p, nil
}

// ensureOwn returns uacli's application instance certificate and key, creating them
// in own/ when missing.
func (e *env) ensureOwn() (*x509.Certificate, crypto.Signer, error) {
	p, err := e.openPKI()
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	cert, key, err := p.EnsureOwn(applicationURI(), []string{host}, pki.OwnOptions{ApplicationName: "uacli"})
	if err != nil {
		return nil, nil, err
	}
	e.own = cert
	return cert, key, nil
}

// applicationURI is uacli's ApplicationUri, also in its certificate.
func applicationURI() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return "urn:" + host + ":uastack:uacli"
}

// dial connects to --url with the security and identity flags, once.
func (e *env) dial(ctx context.Context) (*client.Client, error) {
	if e.c != nil {
		return e.c, nil
	}
	polURI, err := securityPolicyURI(e.g.policy)
	if err != nil {
		return nil, err
	}
	mode, err := securityMode(e.g.mode, polURI)
	if err != nil {
		return nil, err
	}
	if polURI == "" && e.g.mode != "" {
		if polURI, err = e.bestPolicy(ctx, mode); err != nil {
			return nil, err
		}
	}
	cert, key, err := e.ensureOwn()
	if err != nil {
		return nil, err
	}
	opts := []client.Option{
		client.Certificate(cert.Raw, key),
		client.TrustStore(e.store),
		client.Application(applicationURI(), "uacli"),
		client.SessionName("uacli"),
		client.RequestTimeout(e.g.timeout),
		// A command line tool reports at once; a person retries.
		client.WithBackoff(client.Backoff{Attempts: 1}),
	}
	if polURI != "" {
		opts = append(opts, client.Security(polURI, mode))
	}
	id, err := e.identity()
	if err != nil {
		return nil, err
	}
	opts = append(opts, id)
	dctx, cancel := context.WithTimeout(ctx, e.g.timeout)
	defer cancel()
	c, err := client.Dial(dctx, e.g.url, opts...)
	if err != nil {
		return nil, err
	}
	e.c = c
	return c, nil
}

// bestPolicy picks, for --mode without --policy, the policy of the endpoint with that
// mode and the highest SecurityLevel among the policies uacli implements.
func (e *env) bestPolicy(ctx context.Context, mode ua.MessageSecurityMode) (string, error) {
	if mode == ua.MessageSecurityModeNone {
		return policy.URINone, nil
	}
	rctx, cancel := e.requestContext(ctx)
	defer cancel()
	eps, err := client.GetEndpoints(rctx, e.g.url)
	if err != nil {
		return "", err
	}
	best, level := "", -1
	for _, ep := range eps {
		if _, ok := policy.Lookup(ep.SecurityPolicyUri); ok && ep.SecurityMode == mode && int(ep.SecurityLevel) > level {
			best, level = ep.SecurityPolicyUri, int(ep.SecurityLevel)
		}
	}
	if best == "" {
		return "", fmt.Errorf("the server offers no endpoint with mode %s: %w", modeName(mode), status.BadSecurityPolicyRejected)
	}
	return best, nil
}

// identity returns the identity option of the flags: X509 with --cert, user name with
// --user, else anonymous.
func (e *env) identity() (client.Option, error) {
	switch {
	case e.g.certFile != "" || e.g.keyFile != "":
		if e.g.certFile == "" || e.g.keyFile == "" {
			return nil, usagef("--cert and --key go together")
		}
		der, key, err := loadKeyPair(e.g.certFile, e.g.keyFile)
		if err != nil {
			return nil, err
		}
		return client.X509Identity(der, key), nil
	case e.g.user != "":
		return client.UserName(e.g.user, e.g.password), nil
	case e.g.password != "" && os.Getenv("UASTACK_PASSWORD") == "":
		return nil, usagef("--password without --user")
	}
	return client.Anonymous(), nil
}

// loadKeyPair reads a certificate (DER or PEM) and a PEM private key (PKCS#8,
// PKCS#1 or SEC 1).
func loadKeyPair(certFile, keyFile string) ([]byte, crypto.Signer, error) {
	certs, err := readCertFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, nil, fmt.Errorf("%s: no PEM block", keyFile)
	}
	var k any
	if k, err = x509.ParsePKCS8PrivateKey(blk.Bytes); err != nil {
		if k, err = x509.ParsePKCS1PrivateKey(blk.Bytes); err != nil {
			if k, err = x509.ParseECPrivateKey(blk.Bytes); err != nil {
				return nil, nil, fmt.Errorf("%s: not a PKCS#8, PKCS#1 or EC private key", keyFile)
			}
		}
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: key cannot sign", keyFile)
	}
	return certs[0].Raw, signer, nil
}

// close ends the session and closes the PKI, which finishes writing copies of
// rejected certificates.
func (e *env) close() {
	if e.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = e.c.Close(ctx)
		cancel()
		e.c = nil
	}
	if e.store != nil {
		_ = e.store.Close()
		e.store = nil
	}
}

// requestContext bounds one request by --timeout.
func (e *env) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.g.timeout)
}

// errNoNamespace is returned for an nsu= URI the server does not know.
var errNoNamespace = errors.New("namespace URI not in the server's NamespaceArray")
