package server_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// dialNone opens a SecurityPolicy None channel to ts with our own client role.
func dialNone(t *testing.T, ctx context.Context, ts *servertest.Server) *uasc.ClientChannel {
	t.Helper()
	nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", ts.Addr.String())
	require.NoError(t, err)
	conn, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: ts.URL})
	require.NoError(t, err)
	ch, err := uasc.Dial(ctx, conn, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ch.Close() })
	return ch
}

// requireFault checks that err carries code and resp is a ServiceFault echoing handle.
func requireFault(t *testing.T, resp codec.Structure, err error, code status.Code, handle uint32) {
	t.Helper()
	require.ErrorIs(t, err, code)
	f, ok := resp.(*ua.ServiceFault)
	require.True(t, ok, "response is %T", resp)
	require.Equal(t, code, f.ResponseHeader.ServiceResult)
	require.Equal(t, handle, f.ResponseHeader.RequestHandle)
}

// TestSessionChecks covers the authentication-token checks every service makes and the
// ServiceFault for services not implemented, with raw requests on a None channel.
func TestSessionChecks(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := dialNone(t, ctx, ts)
	read := func(token codec.NodeId, handle uint32) (codec.Structure, error) {
		return ch.Request(ctx, &ua.ReadRequest{
			RequestHeader: ua.RequestHeader{AuthenticationToken: token, RequestHandle: handle},
			NodesToRead:   []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13}},
		})
	}

	// No session at all.
	resp, err := read(codec.NodeId{}, 1)
	requireFault(t, resp, err, status.BadSessionIdInvalid, 1)

	// Created, not activated.
	resp, err = ch.Request(ctx, &ua.CreateSessionRequest{
		RequestHeader:           ua.RequestHeader{RequestHandle: 2},
		SessionName:             "test",
		RequestedSessionTimeout: 1, // below the minimum: revised up
	})
	require.NoError(t, err)
	cs := resp.(*ua.CreateSessionResponse)
	require.Equal(t, uint32(2), cs.ResponseHeader.RequestHandle)
	require.Len(t, cs.ServerNonce, 32)
	require.Equal(t, ts.Config.Limits.MinSessionTimeout.Seconds()*1000, cs.RevisedSessionTimeout)
	require.NotEqual(t, cs.SessionId, cs.AuthenticationToken)
	require.NotEmpty(t, cs.ServerEndpoints)
	resp, err = read(cs.AuthenticationToken, 3)
	requireFault(t, resp, err, status.BadSessionNotActivated, 3)
	resp, err = ch.Request(ctx, &ua.BrowseNextRequest{
		RequestHeader:      ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 4},
		ContinuationPoints: [][]byte{[]byte("x")},
	})
	requireFault(t, resp, err, status.BadSessionNotActivated, 4)

	// Activated anonymously with a null token: the nonce changes, reads work.
	resp, err = ch.Request(ctx, &ua.ActivateSessionRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 5},
	})
	require.NoError(t, err)
	as := resp.(*ua.ActivateSessionResponse)
	require.Len(t, as.ServerNonce, 32)
	require.NotEqual(t, cs.ServerNonce, as.ServerNonce)
	resp, err = read(cs.AuthenticationToken, 6)
	require.NoError(t, err)
	rr := resp.(*ua.ReadResponse)
	require.Equal(t, status.Good, rr.Results[0].Status)

	// Read limits and arguments.
	resp, err = ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 7}})
	requireFault(t, resp, err, status.BadNothingToDo, 7)
	resp, err = ch.Request(ctx, &ua.ReadRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 8},
		MaxAge:        -1,
		NodesToRead:   []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13}},
	})
	requireFault(t, resp, err, status.BadMaxAgeInvalid, 8)

	// A service the server does not implement.
	resp, err = ch.Request(ctx, &ua.QueryFirstRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 9}})
	requireFault(t, resp, err, status.BadServiceUnsupported, 9)

	// Write and Call with nothing to do.
	resp, err = ch.Request(ctx, &ua.WriteRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 14}})
	requireFault(t, resp, err, status.BadNothingToDo, 14)
	resp, err = ch.Request(ctx, &ua.CallRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 15}})
	requireFault(t, resp, err, status.BadNothingToDo, 15)

	// TranslateBrowsePaths: Root/Objects/Server.
	resp, err = ch.Request(ctx, &ua.TranslateBrowsePathsToNodeIdsRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 10},
		BrowsePaths: []ua.BrowsePath{{
			StartingNode: codec.NewNumericNodeId(0, 85),
			RelativePath: ua.RelativePath{Elements: []ua.RelativePathElement{{
				ReferenceTypeId: codec.NewNumericNodeId(0, 33), IncludeSubtypes: true,
				TargetName: codec.QualifiedName{Name: "Server"},
			}}},
		}},
	})
	require.NoError(t, err)
	tr := resp.(*ua.TranslateBrowsePathsToNodeIdsResponse)
	require.Equal(t, status.Good, tr.Results[0].StatusCode)
	require.Len(t, tr.Results[0].Targets, 1)
	require.Equal(t, codec.NewNumericNodeId(0, 2253), tr.Results[0].Targets[0].TargetId.NodeId)

	// Another channel may not use the session without activating it there.
	other := dialNone(t, ctx, ts)
	resp, err = other.Request(ctx, &ua.ReadRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 11},
		NodesToRead:   []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13}},
	})
	requireFault(t, resp, err, status.BadSecureChannelIdInvalid, 11)

	// Closed: the token is gone.
	resp, err = ch.Request(ctx, &ua.CloseSessionRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 12}})
	require.NoError(t, err)
	require.IsType(t, &ua.CloseSessionResponse{}, resp)
	resp, err = read(cs.AuthenticationToken, 13)
	requireFault(t, resp, err, status.BadSessionIdInvalid, 13)
	resp, err = ch.Request(ctx, &ua.WriteRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 16},
		NodesToWrite:  []ua.WriteValue{{NodeId: codec.NewStringNodeId(1, "Demo.Scalar_Int32"), AttributeId: 13}},
	})
	requireFault(t, resp, err, status.BadSessionIdInvalid, 16)
	resp, err = ch.Request(ctx, &ua.CallRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: cs.AuthenticationToken, RequestHandle: 17},
		MethodsToCall: []ua.CallMethodRequest{{ObjectId: codec.NewStringNodeId(1, "Demo"), MethodId: codec.NewStringNodeId(1, "Demo.Add")}},
	})
	requireFault(t, resp, err, status.BadSessionIdInvalid, 17)
}

// activate creates and activates an anonymous session on ch and returns its token.
func activate(t *testing.T, ctx context.Context, ch *uasc.ClientChannel) codec.NodeId {
	t.Helper()
	resp, err := ch.Request(ctx, &ua.CreateSessionRequest{SessionName: "t"})
	require.NoError(t, err)
	token := resp.(*ua.CreateSessionResponse).AuthenticationToken
	_, err = ch.Request(ctx, &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: token},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: "Anonymous"}),
	})
	require.NoError(t, err)
	return token
}

// TestSessionLimits checks MaxSessionCount (BadTooManySessions), the per-session cap on
// browse continuation points (BadNoContinuationPoints), and moving a session to another
// channel by activating it there.
func TestSessionLimits(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Limits.MaxSessionCount = 1
		c.Limits.MaxBrowseContinuationPoints = 1
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch := dialNone(t, ctx, ts)
	token := activate(t, ctx, ch)

	resp, err := ch.Request(ctx, &ua.CreateSessionRequest{RequestHeader: ua.RequestHeader{RequestHandle: 1}, SessionName: "second"})
	requireFault(t, resp, err, status.BadTooManySessions, 1)

	objects := ua.BrowseDescription{
		NodeId:          codec.NewNumericNodeId(0, 85),
		BrowseDirection: ua.BrowseDirectionForward,
		ReferenceTypeId: codec.NewNumericNodeId(0, 33),
		IncludeSubtypes: true,
		ResultMask:      0x3f,
	}
	resp, err = ch.Request(ctx, &ua.BrowseRequest{
		RequestHeader:                 ua.RequestHeader{AuthenticationToken: token},
		RequestedMaxReferencesPerNode: 1,
		NodesToBrowse:                 []ua.BrowseDescription{objects, objects},
	})
	require.NoError(t, err)
	br := resp.(*ua.BrowseResponse)
	require.Equal(t, status.Good, br.Results[0].StatusCode)
	require.NotEmpty(t, br.Results[0].ContinuationPoint)
	require.Equal(t, status.BadNoContinuationPoints, br.Results[1].StatusCode)

	// Activating on a second channel moves the session there; the first loses it.
	other := dialNone(t, ctx, ts)
	_, err = other.Request(ctx, &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: token},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: "Anonymous"}),
	})
	require.NoError(t, err)
	readReq := &ua.ReadRequest{
		RequestHeader: ua.RequestHeader{AuthenticationToken: token, RequestHandle: 2},
		NodesToRead:   []ua.ReadValueId{{NodeId: codec.NewNumericNodeId(0, 2258), AttributeId: 13}},
	}
	_, err = other.Request(ctx, readReq)
	require.NoError(t, err)
	resp, err = ch.Request(ctx, readReq)
	requireFault(t, resp, err, status.BadSecureChannelIdInvalid, 2)

	// An unknown identity token policy id is refused.
	resp, err = other.Request(ctx, &ua.ActivateSessionRequest{
		RequestHeader:     ua.RequestHeader{AuthenticationToken: token, RequestHandle: 3},
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: "nope"}),
	})
	requireFault(t, resp, err, status.BadIdentityTokenInvalid, 3)
}
