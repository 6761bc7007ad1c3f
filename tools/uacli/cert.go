package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"uastack.dev/pkg/pki"
)

func init() {
	register("cert", &command{
		synopsis: "create | list | trust <file|thumbprint> | reject <file|thumbprint>",
		summary:  "manage uacli's certificates: its own, and the servers' it trusts or rejected",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			o := &certOptions{}
			fs.BoolVar(&o.force, "force", false, "create: replace an existing certificate")
			fs.IntVar(&o.bits, "bits", pki.DefaultOwnKeyBits, "create: RSA key size")
			fs.StringVar(&o.hosts, "hosts", "", "create: comma-separated DNS names and IP addresses (default: this host)")
			return o.run
		},
	})
}

type certOptions struct {
	force bool
	bits  int
	hosts string
}

// certRow is one certificate file in a store.
type certRow struct {
	Store      string `json:"store"`
	Thumbprint string `json:"thumbprint"`
	Subject    string `json:"subject"`
	NotAfter   string `json:"notAfter"`
	File       string `json:"file"`
}

func (o *certOptions) run(_ context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("cert needs a sub-command: create, list, trust or reject")
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "create":
		if len(rest) != 0 {
			return usagef("cert create takes no arguments")
		}
		return o.create(e)
	case "list":
		if len(rest) != 0 {
			return usagef("cert list takes no arguments")
		}
		return e.listCerts()
	case "trust":
		if len(rest) != 1 {
			return usagef("cert trust needs one file or thumbprint")
		}
		return e.moveCert(rest[0], "rejected", "trusted")
	case "reject":
		if len(rest) != 1 {
			return usagef("cert reject needs one file or thumbprint")
		}
		return e.moveCert(rest[0], "trusted", "rejected")
	}
	return usagef("unknown cert sub-command %q (create, list, trust, reject)", sub)
}

// create makes uacli's application instance certificate, or shows the existing one.
func (o *certOptions) create(e *env) error {
	p, err := e.openPKI()
	if err != nil {
		return err
	}
	ownDir := filepath.Join(p.Root(), "own")
	if o.force {
		for _, d := range []string{"certs", "private"} {
			if err := removeFiles(filepath.Join(ownDir, d)); err != nil {
				return err
			}
		}
	}
	hosts := splitList(o.hosts)
	if len(hosts) == 0 {
		h, _ := os.Hostname()
		hosts = []string{h}
	}
	cert, _, err := p.EnsureOwn(applicationURI(), hosts, pki.OwnOptions{ApplicationName: "uacli", KeyBits: o.bits})
	if err != nil {
		return err
	}
	row := certRow{Store: "own", Thumbprint: pki.Thumbprint(cert), Subject: cert.Subject.String(),
		NotAfter: cert.NotAfter.UTC().Format(time.RFC3339), File: findCertFile(filepath.Join(ownDir, "certs"), cert)}
	if e.g.json {
		return e.writeJSON(row)
	}
	fmt.Fprintf(e.stdout, "uacli's certificate %s\n  subject   %s\n  uri       %s\n  not after %s\n  file      %s\n",
		row.Thumbprint, row.Subject, applicationURI(), row.NotAfter, row.File)
	return nil
}

func (e *env) listCerts() error {
	p, err := e.openPKI()
	if err != nil {
		return err
	}
	var rows []certRow
	for _, store := range []string{"own", "trusted", "issuer", "rejected"} {
		dir := filepath.Join(p.Root(), store, "certs")
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, ent := range entries {
			if ent.IsDir() {
				continue
			}
			file := filepath.Join(dir, ent.Name())
			certs, err := readCertFile(file)
			if err != nil {
				fmt.Fprintf(e.stderr, "uacli: skipping %s: %v\n", file, err)
				continue
			}
			c := certs[0]
			rows = append(rows, certRow{Store: store, Thumbprint: pki.Thumbprint(c), Subject: c.Subject.String(),
				NotAfter: c.NotAfter.UTC().Format(time.RFC3339), File: file})
		}
	}
	if e.g.json {
		if rows == nil {
			rows = []certRow{}
		}
		return e.writeJSON(struct {
			PKI          string    `json:"pki"`
			Certificates []certRow `json:"certificates"`
		}{p.Root(), rows})
	}
	fmt.Fprintf(e.stdout, "PKI %s\n", p.Root())
	t := newTable(e.stdout, "STORE", "THUMBPRINT", "SUBJECT", "NOT AFTER", "FILE")
	for _, r := range rows {
		t.add(r.Store, r.Thumbprint, r.Subject, r.NotAfter, filepath.Base(r.File))
	}
	return t.flush()
}

// moveCert moves the certificate named by arg (a thumbprint, or a file in the from
// store) to the to store. A file outside the stores is copied into to instead.
func (e *env) moveCert(arg, from, to string) error {
	p, err := e.openPKI()
	if err != nil {
		return err
	}
	fromDir, toDir := filepath.Join(p.Root(), from, "certs"), filepath.Join(p.Root(), to, "certs")
	src, cert, err := findCert(fromDir, arg)
	if err != nil {
		return err
	}
	if src == "" {
		// Not in the from store: a file given by path is copied in.
		certs, err := readCertFile(arg)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%q is neither a file nor the thumbprint of a certificate in %s (`uacli cert list` shows them)", arg, fromDir)
			}
			return err
		}
		cert = certs[0]
	}
	if err := os.MkdirAll(toDir, 0o700); err != nil {
		return err
	}
	dst := filepath.Join(toDir, pki.StoreFileName(cert.Subject.CommonName, pki.Thumbprint(cert)))
	if err := os.WriteFile(dst, cert.Raw, 0o600); err != nil {
		return err
	}
	if src != "" {
		if err := os.Remove(src); err != nil {
			return err
		}
	}
	if e.g.json {
		return e.writeJSON(certRow{Store: to, Thumbprint: pki.Thumbprint(cert), Subject: cert.Subject.String(),
			NotAfter: cert.NotAfter.UTC().Format(time.RFC3339), File: dst})
	}
	verb := map[string]string{"trusted": "trusted", "rejected": "rejected"}[to]
	fmt.Fprintf(e.stdout, "%s %s (%s)\n  now %s\n", verb, pki.Thumbprint(cert), cert.Subject.String(), dst)
	return nil
}

// findCert looks in dir for a certificate whose thumbprint is arg (case does not
// matter, a unique prefix of at least 8 digits will do) or whose file is arg. It
// returns "" when there is none.
func findCert(dir, arg string) (string, *x509.Certificate, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", nil, err
	}
	want := strings.ToUpper(strings.TrimSpace(arg))
	abs, _ := filepath.Abs(arg)
	var file string
	var found *x509.Certificate
	for _, ent := range entries {
		if ent.IsDir() {
			continue
		}
		path := filepath.Join(dir, ent.Name())
		certs, err := readCertFile(path)
		if err != nil {
			continue
		}
		tp := pki.Thumbprint(certs[0])
		pathAbs, _ := filepath.Abs(path)
		if tp == want || pathAbs == abs || (len(want) >= 8 && strings.HasPrefix(tp, want)) {
			if found != nil && pki.Thumbprint(found) != tp {
				return "", nil, usagef("%q matches more than one certificate in %s: give the whole thumbprint", arg, dir)
			}
			file, found = path, certs[0]
		}
	}
	return file, found, nil
}

// findCertFile returns the file in dir that holds cert, or dir when none does.
func findCertFile(dir string, cert *x509.Certificate) string {
	if f, _, err := findCert(dir, pki.Thumbprint(cert)); err == nil && f != "" {
		return f
	}
	return dir
}

// readCertFile reads the certificates in a DER or PEM file.
func readCertFile(path string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	der := b
	if blk, _ := pem.Decode(b); blk != nil {
		der = nil
		for rest := b; ; {
			var blk *pem.Block
			if blk, rest = pem.Decode(rest); blk == nil {
				break
			}
			if blk.Type == "CERTIFICATE" {
				der = append(der, blk.Bytes...)
			}
		}
	}
	certs, err := x509.ParseCertificates(der)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no certificate", path)
	}
	return certs, nil
}

// removeFiles deletes the regular files in dir.
func removeFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ent := range slices.Clone(entries) {
		if !ent.IsDir() {
			if err := os.Remove(filepath.Join(dir, ent.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
