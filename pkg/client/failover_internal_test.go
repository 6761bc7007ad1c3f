package client

import (
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// TestAnonymousNone: a ServiceLevel probe goes without security only to an endpoint
// without security that admits an anonymous session.
func TestAnonymousNone(t *testing.T) {
	anon := []ua.UserTokenPolicy{{PolicyId: "anonymous", TokenType: ua.UserTokenTypeAnonymous}}
	user := []ua.UserTokenPolicy{{PolicyId: "username", TokenType: ua.UserTokenTypeUserName}}
	none := func(tokens []ua.UserTokenPolicy) ua.EndpointDescription {
		return ua.EndpointDescription{SecurityPolicyUri: policy.URINone, SecurityMode: ua.MessageSecurityModeNone, UserIdentityTokens: tokens}
	}
	secure := ua.EndpointDescription{SecurityPolicyUri: policy.URIBasic256Sha256, SecurityMode: ua.MessageSecurityModeSignAndEncrypt, UserIdentityTokens: anon}
	require.True(t, anonymousNone([]ua.EndpointDescription{secure, none(anon)}))
	require.False(t, anonymousNone([]ua.EndpointDescription{secure}), "secure endpoints only")
	require.False(t, anonymousNone([]ua.EndpointDescription{secure, none(user)}), "None without anonymous access")
	require.False(t, anonymousNone(nil))
}
