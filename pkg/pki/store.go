package pki

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Folder names below the PKI root (Part 12 §7.7, as laid out by the .NET stack).
const (
	dirOwnCerts      = "own/certs"
	dirOwnPrivate    = "own/private"
	dirTrustedCerts  = "trusted/certs"
	dirTrustedCRL    = "trusted/crl"
	dirIssuerCerts   = "issuer/certs"
	dirIssuerCRL     = "issuer/crl"
	dirRejectedCerts = "rejected/certs"
)

// Defaults for [Options].
const (
	DefaultMinKeyBits  = 2048
	DefaultMaxRejected = 100
	DefaultCacheSize   = 1024
)

// Options configure a [PKI]. The zero value is secure: nothing is trusted
// that is not in trusted/certs (directly or through a trusted CA).
type Options struct {
	// Logger receives warnings (auto-accept, unreadable store files) and
	// debug records of suppressed checks. Default slog.Default().
	Logger *slog.Logger

	// AutoAccept accepts a certificate whose only fault is that it is not
	// trusted (BadCertificateUntrusted). Every acceptance is logged as a
	// warning. For commissioning and tests only; never the default.
	AutoAccept bool

	// MinKeyBits is the smallest RSA modulus accepted in a chain
	// (BadCertificatePolicyCheckFailed below it). Default 2048; set 1024 for
	// peers that still use Basic128Rsa15 or Basic256.
	MinKeyBits int

	// AllowSHA1 accepts SHA-1 certificate signatures (Basic128Rsa15,
	// Basic256). By default they fail with BadCertificatePolicyCheckFailed.
	AllowSHA1 bool

	// Suppress lists the suppressible checks of Part 4 Table 106 that every
	// validation skips. ValidateOptions.Suppress adds to it.
	Suppress Suppress

	// MaxRejected bounds the number of files kept in rejected/certs; the
	// oldest are removed first. Default 100.
	MaxRejected int

	// PollInterval, if positive, checks the trusted and issuer folders at
	// this interval (a stat of each folder entry, no parsing unless
	// something changed) and reloads on change. Zero means reload only on
	// [PKI.Reload].
	PollInterval time.Duration

	// CacheSize bounds the number of validated chains remembered between
	// calls (by exact bytes and store generation). Default 1024.
	CacheSize int

	// Now is the clock; default time.Now. Rand is the randomness for
	// serial numbers and key generation; default crypto/rand.Reader.
	Now  func() time.Time
	Rand io.Reader
}

// PKI is an opened set of certificate stores. It is safe for concurrent use.
// Close it to stop the poller and the rejected-certificate writer.
type PKI struct {
	root string
	opts Options
	log  *slog.Logger

	reloadMu sync.Mutex // guards lastStat; serialises Reload

	lastStat string

	mu  sync.RWMutex // guards own
	own *ownPair

	st atomic.Pointer[snapshot] // written only under reloadMu

	subsMu  sync.Mutex // guards subs, nextSub
	subs    map[int]func()
	nextSub int

	// cache maps the exact chain bytes to the outcome of the expensive
	// checks. The map is copied on write and never modified after it is
	// published, so look-ups take no lock.
	cacheMu sync.Mutex // serialises writers of cache
	cache   atomic.Pointer[map[string]*verified]

	rejected *rejectedWriter

	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// snapshot is one immutable reading of the trusted and issuer stores.
type snapshot struct {
	gen     uint64
	digest  [sha256.Size]byte
	trusted map[string]bool                // raw DER → in trusted/certs
	subject map[string][]*x509.Certificate // raw subject → trusted and issuer certificates
	crls    map[string][]*x509.RevocationList
}

// Open opens (and creates, if missing) the stores below root, reads the
// trusted and issuer stores, and starts the optional poller.
func Open(root string, opts Options) (*PKI, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MinKeyBits <= 0 {
		opts.MinKeyBits = DefaultMinKeyBits
	}
	if opts.MaxRejected <= 0 {
		opts.MaxRejected = DefaultMaxRejected
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	for _, d := range []string{dirOwnCerts, dirTrustedCerts, dirTrustedCRL, dirIssuerCerts, dirIssuerCRL, dirRejectedCerts} {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
			return nil, fmt.Errorf("pki: create store folder: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(dirOwnPrivate)), 0o700); err != nil {
		return nil, fmt.Errorf("pki: create store folder: %w", err)
	}
	p := &PKI{
		root: root,
		opts: opts,
		log:  opts.Logger,
		subs: map[int]func(){},
		done: make(chan struct{}),
	}
	p.st.Store(&snapshot{})
	p.clearCache()
	if opts.AutoAccept {
		p.log.Warn("pki: AutoAccept is on: untrusted peer certificates will be accepted", "root", root)
	}
	if err := p.Reload(); err != nil {
		return nil, err
	}
	p.rejected = newRejectedWriter(filepath.Join(root, filepath.FromSlash(dirRejectedCerts)), opts.MaxRejected, p.log)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.rejected.run(p.done)
	}()
	if opts.PollInterval > 0 {
		p.wg.Add(1)
		go p.poll(opts.PollInterval)
	}
	return p, nil
}

// Root returns the folder the stores live in.
func (p *PKI) Root() string { return p.root }

// Close stops the poller and the rejected-certificate writer, finishing
// any copy already queued. It is safe to call more than once.
func (p *PKI) Close() error {
	p.closeOnce.Do(func() { close(p.done) })
	p.wg.Wait()
	return nil
}

// Generation returns a number that changes whenever the content of the
// trusted or issuer stores (certificates or CRLs) changes.
func (p *PKI) Generation() uint64 {
	return p.st.Load().gen
}

// OnTrustChange registers f to be called after a reload that changed the
// trusted or issuer stores; the secure channel layer then re-checks its peers
// with [PKI.IsTrusted]. f runs on the goroutine that reloaded, with no lock
// held (it may call IsTrusted or Reload), and must not block for long. The
// returned function unregisters f.
func (p *PKI) OnTrustChange(f func()) (cancel func()) {
	p.subsMu.Lock()
	id := p.nextSub
	p.nextSub++
	p.subs[id] = f
	p.subsMu.Unlock()
	return func() {
		p.subsMu.Lock()
		delete(p.subs, id)
		p.subsMu.Unlock()
	}
}

// Reload re-reads the trusted and issuer stores. If their content changed,
// the generation advances, the validation cache is dropped and the
// OnTrustChange subscribers are called (after the new stores are in use, on
// the calling goroutine). Unreadable files are skipped with a warning; only
// a folder that cannot be listed is an error.
func (p *PKI) Reload() error {
	changed, err := p.reload()
	if err != nil || !changed {
		return err
	}
	p.subsMu.Lock()
	fs := make([]func(), 0, len(p.subs))
	for _, f := range p.subs {
		fs = append(fs, f)
	}
	p.subsMu.Unlock()
	for _, f := range fs {
		f()
	}
	return nil
}

func (p *PKI) reload() (changed bool, err error) {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	stat, err := p.statSignature()
	if err != nil {
		return false, err
	}
	next, err := p.readStores()
	if err != nil {
		return false, err
	}
	p.lastStat = stat
	cur := p.st.Load()
	if next.digest == cur.digest {
		return false, nil
	}
	next.gen = cur.gen + 1
	p.st.Store(next)
	p.clearCache()
	return true, nil
}

func (p *PKI) poll(every time.Duration) {
	defer p.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		stat, err := p.statSignature()
		if err != nil {
			p.log.Warn("pki: poll stores", "err", err)
			continue
		}
		p.reloadMu.Lock()
		same := stat == p.lastStat
		p.reloadMu.Unlock()
		if same {
			continue
		}
		if err := p.Reload(); err != nil {
			p.log.Warn("pki: reload stores", "err", err)
		}
	}
}

// statSignature summarises names, sizes and modification times of the
// trusted and issuer folders, so that the poller parses nothing when
// nothing changed.
func (p *PKI) statSignature() (string, error) {
	var b strings.Builder
	for _, d := range []string{dirTrustedCerts, dirTrustedCRL, dirIssuerCerts, dirIssuerCRL} {
		es, err := os.ReadDir(filepath.Join(p.root, filepath.FromSlash(d)))
		if err != nil {
			return "", fmt.Errorf("pki: list %s: %w", d, err)
		}
		b.WriteString(d)
		for _, e := range es {
			info, err := e.Info()
			if err != nil {
				continue
			}
			b.WriteByte('\n')
			b.WriteString(e.Name())
			b.WriteByte(' ')
			b.WriteString(strconv.FormatInt(info.Size(), 10))
			b.WriteByte(' ')
			b.WriteString(strconv.FormatInt(info.ModTime().UnixNano(), 10))
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

func (p *PKI) readStores() (*snapshot, error) {
	s := &snapshot{
		trusted: map[string]bool{},
		subject: map[string][]*x509.Certificate{},
		crls:    map[string][]*x509.RevocationList{},
	}
	var parts [][]byte
	addCert := func(c *x509.Certificate, trusted bool) {
		if trusted {
			s.trusted[string(c.Raw)] = true
		}
		for _, o := range s.subject[string(c.RawSubject)] {
			if bytes.Equal(o.Raw, c.Raw) {
				return
			}
		}
		s.subject[string(c.RawSubject)] = append(s.subject[string(c.RawSubject)], c)
	}
	for _, d := range []struct {
		dir     string
		trusted bool
	}{{dirTrustedCerts, true}, {dirIssuerCerts, false}} {
		certs, err := p.readCertDir(d.dir)
		if err != nil {
			return nil, err
		}
		for _, c := range certs {
			addCert(c, d.trusted)
			parts = append(parts, append([]byte{'C', boolByte(d.trusted)}, c.Raw...))
		}
	}
	for _, d := range []string{dirTrustedCRL, dirIssuerCRL} {
		crls, err := p.readCRLDir(d)
		if err != nil {
			return nil, err
		}
		for _, c := range crls {
			s.crls[string(c.RawIssuer)] = append(s.crls[string(c.RawIssuer)], c)
			parts = append(parts, append([]byte{'L'}, c.Raw...))
		}
	}
	slices.SortFunc(parts, bytes.Compare)
	h := sha256.New()
	for _, b := range parts {
		var n [8]byte
		for i := range n {
			n[i] = byte(len(b) >> (8 * i))
		}
		h.Write(n[:])
		h.Write(b)
	}
	h.Sum(s.digest[:0])
	return s, nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// readCertDir reads every certificate file in one folder (DER or PEM, a
// PEM file may hold several certificates).
func (p *PKI) readCertDir(dir string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	err := p.eachFile(dir, func(name string, data []byte) {
		certs, err := parseCertificates(data)
		if err != nil {
			p.log.Warn("pki: skipping unreadable certificate file", "file", name, "err", err)
			return
		}
		out = append(out, certs...)
	})
	return out, err
}

func (p *PKI) readCRLDir(dir string) ([]*x509.RevocationList, error) {
	var out []*x509.RevocationList
	err := p.eachFile(dir, func(name string, data []byte) {
		crls, err := parseCRLs(data)
		if err != nil {
			p.log.Warn("pki: skipping unreadable CRL file", "file", name, "err", err)
			return
		}
		out = append(out, crls...)
	})
	return out, err
}

func (p *PKI) eachFile(dir string, f func(name string, data []byte)) error {
	full := filepath.Join(p.root, filepath.FromSlash(dir))
	es, err := os.ReadDir(full)
	if err != nil {
		return fmt.Errorf("pki: list %s: %w", dir, err)
	}
	for _, e := range es {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		name := filepath.Join(full, e.Name())
		data, err := os.ReadFile(name)
		if err != nil {
			p.log.Warn("pki: skipping unreadable store file", "file", name, "err", err)
			continue
		}
		f(name, data)
	}
	return nil
}

// parseCertificates reads DER (one or several concatenated certificates,
// as OPC UA sends a chain) or PEM "CERTIFICATE" blocks.
func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	if !isPEM(data) {
		return x509.ParseCertificates(data)
	}
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no CERTIFICATE block in PEM file")
	}
	return out, nil
}

func parseCRLs(data []byte) ([]*x509.RevocationList, error) {
	if !isPEM(data) {
		c, err := x509.ParseRevocationList(data)
		if err != nil {
			return nil, err
		}
		return []*x509.RevocationList{c}, nil
	}
	var out []*x509.RevocationList
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "X509 CRL" {
			continue
		}
		c, err := x509.ParseRevocationList(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no X509 CRL block in PEM file")
	}
	return out, nil
}

func isPEM(data []byte) bool {
	return bytes.Contains(data[:min(len(data), 1024)], []byte("-----BEGIN "))
}

// Thumbprint returns the OPC UA certificate thumbprint (SHA-1 of the DER
// encoding, Part 6 §6.2.3) in upper-case hex, as the .NET stack prints it.
func Thumbprint(c *x509.Certificate) string {
	h := sha1.Sum(c.Raw)
	return strings.ToUpper(hex.EncodeToString(h[:]))
}

// fileName returns the store file name of c (StoreFileName).
func fileName(c *x509.Certificate) string {
	return StoreFileName(c.Subject.CommonName, Thumbprint(c))
}

// StoreFileName is the name a certificate with common name cn and thumbprint gets in the
// stores, own/ and rejected/ included: "<CN> [<thumbprint>].der", the CN made safe for a
// file name. Tools that tell a user which file to move use it too.
func StoreFileName(cn, thumbprint string) string {
	if cn == "" {
		cn = "unnamed"
	}
	cn = strings.Map(func(r rune) rune {
		switch {
		case r < 0x20, strings.ContainsRune(`/\:*?"<>|`, r):
			return '_'
		}
		return r
	}, cn)
	if len(cn) > 64 {
		cn = cn[:64]
	}
	return cn + " [" + thumbprint + "].der"
}

// debugEnabled avoids building log attributes when debug logging is off.
func (p *PKI) debugEnabled() bool {
	return p.log.Enabled(context.Background(), slog.LevelDebug)
}
