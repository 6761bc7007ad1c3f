package server

import (
	"fmt"
	"slices"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
)

// Policy ids of the user token policies the server offers (Part 4 §7.42). The anonymous
// one is the id gopcua and most clients send when they were not told otherwise.
const (
	policyIDAnonymous = "Anonymous"
	policyIDUserName  = "UserName"
)

// policyRank orders the security policies by strength for SecurityLevel; a policy not
// listed ranks with the deprecated ones.
var policyRank = map[string]byte{
	policy.URINone:                0,
	policy.URIBasic128Rsa15:       1,
	policy.URIBasic256:            2,
	policy.URIAes128Sha256RsaOaep: 3,
	policy.URIBasic256Sha256:      4,
	policy.URIAes256Sha256RsaPss:  5,
}

// securityLevel is the relative security of an endpoint (Part 4 §7.14): 0 for None,
// otherwise higher for stronger policies and for SignAndEncrypt over Sign.
func securityLevel(uri string, mode ua.MessageSecurityMode) byte {
	r := policyRank[uri]
	if uri == policy.URINone || mode == ua.MessageSecurityModeNone {
		return 0
	}
	level := 10 * r
	if mode == ua.MessageSecurityModeSignAndEncrypt {
		level += 5
	}
	return level
}

// parseMode maps a configured mode name to the MessageSecurityMode.
func parseMode(s string) (ua.MessageSecurityMode, error) {
	switch s {
	case config.ModeNone:
		return ua.MessageSecurityModeNone, nil
	case config.ModeSign:
		return ua.MessageSecurityModeSign, nil
	case config.ModeSignAndEncrypt:
		return ua.MessageSecurityModeSignAndEncrypt, nil
	}
	return ua.MessageSecurityModeInvalid, fmt.Errorf("unknown message security mode %q", s)
}

// channelSecurity lists the (policy, mode) pairs of cfg for the secure channel layer.
func channelSecurity(cfg *config.Config) ([]uasc.SecurityConfig, error) {
	var out []uasc.SecurityConfig
	for _, sp := range cfg.Security.SecurityPolicies {
		uri, ok := config.PolicyURI(sp.Policy)
		if !ok {
			return nil, fmt.Errorf("security policy %q: unknown", sp.Policy)
		}
		for _, m := range sp.Modes {
			mode, err := parseMode(m)
			if err != nil {
				return nil, fmt.Errorf("security policy %q: %w", sp.Policy, err)
			}
			out = append(out, uasc.SecurityConfig{PolicyURI: uri, Mode: mode})
		}
	}
	return out, nil
}

// userTokenPolicies returns the identity tokens offered on every endpoint. An
// X509IdentityToken policy without a SecurityPolicy uses the channel's, so on a None
// endpoint it can only be used when the configuration names one (Part 4 §7.41.5).
func userTokenPolicies(cfg *config.Config) []ua.UserTokenPolicy {
	var out []ua.UserTokenPolicy
	for _, p := range cfg.Security.UserTokenPolicies {
		switch p.Type {
		case config.TokenAnonymous:
			out = append(out, ua.UserTokenPolicy{PolicyId: policyIDAnonymous, TokenType: ua.UserTokenTypeAnonymous})
		case config.TokenUsername:
			uri := ""
			if p.SecurityPolicy != "" {
				uri, _ = config.PolicyURI(p.SecurityPolicy)
			}
			out = append(out, ua.UserTokenPolicy{PolicyId: policyIDUserName, TokenType: ua.UserTokenTypeUserName, SecurityPolicyUri: uri})
		case config.TokenCertificate:
			uri := ""
			if p.SecurityPolicy != "" {
				uri, _ = config.PolicyURI(p.SecurityPolicy)
			}
			out = append(out, ua.UserTokenPolicy{PolicyId: policyIDCertificate, TokenType: ua.UserTokenTypeCertificate, SecurityPolicyUri: uri})
		}
	}
	return out
}

// applicationDescription is the server's ApplicationDescription (Part 4 §7.2).
func applicationDescription(cfg *config.Config) ua.ApplicationDescription {
	return ua.ApplicationDescription{
		ApplicationUri:  cfg.Application.ApplicationURI,
		ProductUri:      cfg.Application.ProductURI,
		ApplicationName: codec.LocalizedText{Text: cfg.Application.ApplicationName},
		ApplicationType: ua.ApplicationTypeServer,
		DiscoveryUrls:   []string{cfg.Endpoint.EndpointURL},
	}
}

// buildEndpoints returns one EndpointDescription per configured (policy, mode), most
// secure first (Part 4 §5.4.4: clients pick by SecurityLevel; the order helps those
// that take the first).
func buildEndpoints(cfg *config.Config, sec []uasc.SecurityConfig, cert []byte) []ua.EndpointDescription {
	app := applicationDescription(cfg)
	tokens := userTokenPolicies(cfg)
	out := make([]ua.EndpointDescription, 0, len(sec))
	for _, s := range sec {
		out = append(out, ua.EndpointDescription{
			EndpointUrl:         cfg.Endpoint.EndpointURL,
			Server:              app,
			ServerCertificate:   cert,
			SecurityMode:        s.Mode,
			SecurityPolicyUri:   s.PolicyURI,
			UserIdentityTokens:  tokens,
			TransportProfileUri: uacp.TransportProfile,
			SecurityLevel:       securityLevel(s.PolicyURI, s.Mode),
		})
	}
	slices.SortStableFunc(out, func(a, b ua.EndpointDescription) int {
		return int(b.SecurityLevel) - int(a.SecurityLevel)
	})
	return out
}
