package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// explain turns a failure into a message that names the StatusCode and says what to
// do about it.
func (e *env) explain(err error) string {
	var ve *pki.ValidationError
	if errors.As(err, &ve) && ve.Code == status.BadCertificateUntrusted {
		// uacli's own check of the server certificate.
		file := filepath.Join(e.g.pkiDir, "rejected", "certs", pki.StoreFileName(commonName(ve.Subject), ve.Thumbprint))
		return fmt.Sprintf("%s: uacli does not trust the server's certificate %s (%s).\n"+
			"  It was copied to %s.\n"+
			"  If that is the server you meant (compare the thumbprint with the server's own), trust it with:\n"+
			"    uacli cert trust %s%s",
			ve.Code.Name(), ve.Thumbprint, ve.Subject, file, ve.Thumbprint, e.pkiFlag())
	}
	if errors.As(err, &ve) {
		return fmt.Sprintf("%s: the server's certificate %s was refused: %s", ve.Code.Name(), ve.Thumbprint, ve.Message)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Sprintf("no server answers at %s (connection refused): is the server running, and is --url right?", e.g.url)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Sprintf("cannot resolve the host of %s: %v", e.g.url, dnsErr)
	}
	var se *client.StatusError
	code, ok := statusOf(err)
	if !ok {
		return err.Error()
	}
	service := ""
	if errors.As(err, &se) && se.Service != "" {
		service = " (" + se.Service + ")"
	}
	head := code.Name() + service
	switch code {
	case status.BadSecurityChecksFailed, status.BadCertificateUntrusted:
		if e.own != nil && e.usedSecurity() {
			name := pki.StoreFileName(e.own.Subject.CommonName, pki.Thumbprint(e.own))
			return fmt.Sprintf("%s: the server refused the secure channel; most likely it does not trust uacli's certificate %s.\n"+
				"  On the server, move %s to pki/trusted/certs (pki: the server's PKI folder, security.pkiDir)\n"+
				"  (uacli's copy is in %s; `uacli cert list` shows it).",
				head, pki.Thumbprint(e.own), shellQuote("pki/rejected/certs/"+name), filepath.Join(e.g.pkiDir, "own", "certs"))
		}
	case status.BadUserAccessDenied:
		who := "anonymous access"
		switch {
		case e.g.certFile != "":
			who = "the user certificate " + e.g.certFile
		case e.g.user != "":
			who = fmt.Sprintf("user %q with that password", e.g.user)
		}
		return fmt.Sprintf("%s: the server refused %s: check --user and --password (or $UASTACK_PASSWORD); repeated failures may lock this client out for a while", head, who)
	case status.BadIdentityTokenRejected, status.BadIdentityTokenInvalid:
		offered := e.offeredTokens()
		if e.g.certFile != "" && strings.Contains(offered, ua.UserTokenTypeCertificate.String()) {
			if certs, err := readCertFile(e.g.certFile); err == nil {
				// The server takes certificates but refused this one: most often
				// it is not in its trust list.
				name := pki.StoreFileName(certs[0].Subject.CommonName, pki.Thumbprint(certs[0]))
				return fmt.Sprintf("%s: the server refused the user certificate %s; most likely it does not trust it.\n"+
					"  On the server, move %s to pki/trusted/certs (pki: the server's PKI folder, security.pkiDir)",
					head, pki.Thumbprint(certs[0]), shellQuote("pki/rejected/certs/"+name))
			}
		}
		return fmt.Sprintf("%s: the server does not accept this kind of identity on this endpoint; it offers: %s", head, offered)
	case status.BadSecurityPolicyRejected:
		return fmt.Sprintf("%s: %v\n  the server offers: %s (see `uacli endpoints`)", head, err, e.offeredEndpoints())
	case status.BadTimeout, status.BadRequestTimeout:
		return fmt.Sprintf("%s: no answer within %v: is the server at %s reachable? (--timeout sets the limit)", head, e.g.timeout, e.g.url)
	case status.BadTooManySessions, status.BadServerTooBusy:
		return fmt.Sprintf("%s: the server is busy; try again later", head)
	case status.BadCertificateInvalid:
		if strings.Contains(err.Error(), "no application certificate") {
			return fmt.Sprintf("%s: uacli has no application certificate: create one with `uacli cert create`", head)
		}
	}
	if h := hint(code); h != "" {
		return fmt.Sprintf("%s: %s (%v)", head, h, err)
	}
	return err.Error()
}

// statusOf finds the StatusCode an error carries.
func statusOf(err error) (status.Code, bool) {
	var se *client.StatusError
	if errors.As(err, &se) {
		return se.Code, true
	}
	var c status.Code
	if errors.As(err, &c) {
		return c, true
	}
	return 0, false
}

// usedSecurity reports whether the failed connection was (or may have been) a
// secured one, where the server checks uacli's certificate.
func (e *env) usedSecurity() bool {
	return !strings.EqualFold(e.g.policy, "None") && e.g.policy != policy.URINone
}

// pkiFlag repeats --pki for a suggested command when it is not the default.
func (e *env) pkiFlag() string {
	if e.g.pkiDir == defaultPKIDir() {
		return ""
	}
	return " --pki " + shellQuote(e.g.pkiDir)
}

// commonName returns the CN of a distinguished name in the form
// pkix.Name.String writes ("CN=uacli,O=...").
func commonName(dn string) string {
	for _, part := range strings.Split(dn, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "CN="); ok {
			return v
		}
	}
	return ""
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t'\"\\$`;&|<>()*?[]#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// offeredTokens lists the identity tokens of the endpoints at --url, per endpoint.
func (e *env) offeredTokens() string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	eps, err := client.GetEndpoints(ctx, e.g.url)
	if err != nil {
		return "(the endpoints could not be read: " + err.Error() + ")"
	}
	seen := map[string]bool{}
	var out []string
	for _, ep := range eps {
		for _, t := range ep.UserIdentityTokens {
			s := t.TokenType.String()
			if t.SecurityPolicyUri != "" {
				s += " (" + policyName(t.SecurityPolicyUri) + ")"
			}
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return strings.Join(out, ", ") + " — anonymous by default, --user/--password for UserName, --cert/--key for Certificate"
}

// offeredEndpoints lists policy and mode of the endpoints at --url.
func (e *env) offeredEndpoints() string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	eps, err := client.GetEndpoints(ctx, e.g.url)
	if err != nil {
		return "(the endpoints could not be read: " + err.Error() + ")"
	}
	out := make([]string, len(eps))
	for i, ep := range eps {
		out[i] = policyName(ep.SecurityPolicyUri) + "/" + modeName(ep.SecurityMode)
	}
	return strings.Join(out, ", ")
}

// hint says what to do about a per-item or service status, or "" when there is
// nothing better than its description.
func hint(c status.Code) string {
	switch c.Sub() {
	case status.BadNodeIdUnknown, status.BadNodeIdInvalid:
		return "no such node: check the id (`uacli browse` lists them)"
	case status.BadAttributeIdInvalid:
		return "the node has no such attribute"
	case status.BadNotReadable:
		return "the node's value may not be read"
	case status.BadNotWritable:
		return "the node's value may not be written"
	case status.BadUserAccessDenied:
		return "this user may not do that: log in as another user with --user"
	case status.BadTypeMismatch:
		return "the value's type does not match the node's DataType: name it with --type"
	case status.BadOutOfRange:
		return "the value is outside the range the node accepts"
	case status.BadIndexRangeInvalid, status.BadIndexRangeNoData:
		return "check --range against the array's length"
	case status.BadMethodInvalid:
		return "no such method on that object"
	case status.BadArgumentsMissing, status.BadTooManyArguments, status.BadInvalidArgument:
		return "check the number and types of the arguments"
	case status.BadNoMatch:
		return "nothing found at that path"
	}
	return c.Description()
}
