package lds

import (
	"context"
	"os"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/pkg/ua/status"
)

// readServiceLevel reads Server.ServiceLevel in an anonymous session on ch, or returns
// 0 when any step is refused. The session is closed before it returns.
func readServiceLevel(ctx context.Context, ch *uasc.ClientChannel, endpointURL string) byte {
	hdr := func(token codec.NodeId) ua.RequestHeader {
		return ua.RequestHeader{AuthenticationToken: token, Timestamp: codec.Now(), TimeoutHint: 10000}
	}
	resp, err := ch.Request(ctx, &ua.CreateSessionRequest{
		RequestHeader: hdr(codec.NodeId{}),
		ClientDescription: ua.ApplicationDescription{
			ApplicationUri: "urn:uastack.dev:discovery:probe", ApplicationType: ua.ApplicationTypeClient,
			ApplicationName: codec.LocalizedText{Text: "uastack discovery probe"},
		},
		EndpointUrl: endpointURL, SessionName: "ServiceLevel probe", RequestedSessionTimeout: 10000,
	})
	cs, ok := resp.(*ua.CreateSessionResponse)
	if err != nil || !ok {
		return 0
	}
	token := cs.AuthenticationToken
	defer ch.Request(ctx, &ua.CloseSessionRequest{RequestHeader: hdr(token), DeleteSubscriptions: true}) //nolint:errcheck // best effort
	policyID := anonymousPolicy(cs.ServerEndpoints)
	if policyID == "" {
		return 0
	}
	resp, err = ch.Request(ctx, &ua.ActivateSessionRequest{
		RequestHeader:     hdr(token),
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: policyID}),
	})
	if _, ok := resp.(*ua.ActivateSessionResponse); err != nil || !ok {
		return 0
	}
	resp, err = ch.Request(ctx, &ua.ReadRequest{
		RequestHeader: hdr(token),
		NodesToRead:   []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, id.Server_ServiceLevel), AttributeId: uint32(attr.Value)}},
	})
	rr, ok := resp.(*ua.ReadResponse)
	if err != nil || !ok || len(rr.Results) != 1 || rr.Results[0].Status != status.Good {
		return 0
	}
	v := rr.Results[0].Value
	if b, ok := v.Value().(byte); ok {
		return b
	}
	return 0
}

// anonymousPolicy returns the policy id of an anonymous token on a None endpoint.
func anonymousPolicy(eps []ua.EndpointDescription) string {
	for _, ep := range eps {
		if ep.SecurityMode != ua.MessageSecurityModeNone {
			continue
		}
		for _, t := range ep.UserIdentityTokens {
			if t.TokenType == ua.UserTokenTypeAnonymous {
				return t.PolicyId
			}
		}
	}
	return ""
}

// semaphorePresent reports whether a registration's semaphore file exists (Part 4
// §5.4.5.2: the registration lasts only as long as the file).
func semaphorePresent(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
