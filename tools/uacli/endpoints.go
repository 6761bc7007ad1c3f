package main

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/ua"
)

func init() {
	register("endpoints", &command{
		synopsis: "",
		summary:  "list the endpoints of the server at --url (GetEndpoints, no session)",
		setup: func(*flag.FlagSet) func(context.Context, *env, []string) error {
			return runEndpoints
		},
	})
}

// endpointJSON is one endpoint in --json output.
type endpointJSON struct {
	EndpointURL       string          `json:"endpointUrl"`
	SecurityPolicy    string          `json:"securityPolicy"`
	SecurityPolicyURI string          `json:"securityPolicyUri"`
	SecurityMode      string          `json:"securityMode"`
	SecurityLevel     byte            `json:"securityLevel"`
	ApplicationURI    string          `json:"applicationUri"`
	Thumbprint        string          `json:"serverCertificateThumbprint,omitempty"`
	UserTokens        []userTokenJSON `json:"userIdentityTokens"`
}

type userTokenJSON struct {
	PolicyID       string `json:"policyId"`
	TokenType      string `json:"tokenType"`
	SecurityPolicy string `json:"securityPolicy,omitempty"`
}

func runEndpoints(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usagef("endpoints takes no arguments")
	}
	rctx, cancel := e.requestContext(ctx)
	defer cancel()
	eps, err := client.GetEndpoints(rctx, e.g.url)
	if err != nil {
		return err
	}
	out := make([]endpointJSON, len(eps))
	for i, ep := range eps {
		out[i] = endpointJSON{
			EndpointURL: ep.EndpointUrl, SecurityPolicy: policyName(ep.SecurityPolicyUri),
			SecurityPolicyURI: ep.SecurityPolicyUri, SecurityMode: modeName(ep.SecurityMode),
			SecurityLevel: ep.SecurityLevel, ApplicationURI: ep.Server.ApplicationUri,
			Thumbprint: thumbprintOf(ep.ServerCertificate), UserTokens: userTokens(ep.UserIdentityTokens),
		}
	}
	if e.g.json {
		return e.writeJSON(out)
	}
	t := newTable(e.stdout, "#", "POLICY", "MODE", "LEVEL", "USER TOKENS", "URL")
	for i, ep := range out {
		tokens := make([]string, len(ep.UserTokens))
		for j, tok := range ep.UserTokens {
			tokens[j] = tok.TokenType
		}
		t.add(strconv.Itoa(i), ep.SecurityPolicy, ep.SecurityMode, strconv.Itoa(int(ep.SecurityLevel)), strings.Join(tokens, ","), ep.EndpointURL)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(out) > 0 {
		fmt.Fprintf(e.stdout, "\nserver %s, certificate %s\n", out[0].ApplicationURI, out[0].Thumbprint)
	}
	return nil
}

// thumbprintOf is the thumbprint of the first certificate in der, or "".
func thumbprintOf(der []byte) string {
	certs, err := x509.ParseCertificates(der)
	if err != nil || len(certs) == 0 {
		return ""
	}
	return pki.Thumbprint(certs[0])
}

func userTokens(ps []ua.UserTokenPolicy) []userTokenJSON {
	out := make([]userTokenJSON, len(ps))
	for i, p := range ps {
		out[i] = userTokenJSON{PolicyID: p.PolicyId, TokenType: p.TokenType.String()}
		if p.SecurityPolicyUri != "" {
			out[i].SecurityPolicy = policyName(p.SecurityPolicyUri)
		}
	}
	return out
}
