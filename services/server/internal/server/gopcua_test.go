package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// connect opens a gopcua client session on the endpoint of ts matching policy and mode.
func connect(t *testing.T, ctx context.Context, url, pol string, mode ua.MessageSecurityMode, tokenType ua.UserTokenType, opts ...opcua.Option) *opcua.Client {
	t.Helper()
	eps, err := opcua.GetEndpoints(ctx, url)
	require.NoError(t, err)
	ep, err := opcua.SelectEndpoint(eps, pol, mode)
	require.NoError(t, err)
	require.Equal(t, "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary", ep.TransportProfileURI)
	opts = append([]opcua.Option{
		opcua.SecurityFromEndpoint(ep, tokenType),
		opcua.RequestTimeout(10 * time.Second),
		opcua.AutoReconnect(false),
	}, opts...)
	c, err := opcua.NewClient(url, opts...)
	require.NoError(t, err)
	require.NoError(t, c.Connect(ctx))
	return c
}

func readValueID(id uint32, attr ua.AttributeID) *ua.ReadValueID {
	return &ua.ReadValueID{NodeID: ua.NewNumericNodeID(0, id), AttributeID: attr}
}

// TestGopcuaNoneAnonymous drives the server with gopcua's high-level client over
// SecurityPolicy None with an anonymous session: ServerStatus and CurrentTime, a browse of
// the Objects folder (whole and in steps of one reference), an unknown node, an invalid
// attribute, an unknown continuation point, then CloseSession.
func TestGopcuaNoneAnonymous(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeAnonymous)

	before := time.Now().Add(-time.Second)
	resp, err := c.Read(ctx, &ua.ReadRequest{
		TimestampsToReturn: ua.TimestampsToReturnBoth,
		NodesToRead: []*ua.ReadValueID{
			readValueID(2256, ua.AttributeIDValue), // Server_ServerStatus
			readValueID(2258, ua.AttributeIDValue), // Server_ServerStatus_CurrentTime
			readValueID(2259, ua.AttributeIDValue), // Server_ServerStatus_State
			readValueID(99999, ua.AttributeIDValue),
			readValueID(2258, ua.AttributeID(999)),
		},
	})
	require.NoError(t, err)
	require.Len(t, resp.Results, 5)

	require.Equal(t, ua.StatusOK, resp.Results[0].Status)
	eo, ok := resp.Results[0].Value.Value().(*ua.ExtensionObject)
	require.True(t, ok, "ServerStatus is %T", resp.Results[0].Value.Value())
	st, ok := eo.Value.(*ua.ServerStatusDataType)
	require.True(t, ok, "ServerStatus body is %T", eo.Value)
	require.Equal(t, ua.ServerStateRunning, st.State)
	require.WithinDuration(t, time.Now(), st.CurrentTime, 5*time.Second)
	require.False(t, st.StartTime.After(st.CurrentTime))
	require.Equal(t, "urn:uastack.dev:server", st.BuildInfo.ProductURI)

	require.Equal(t, ua.StatusOK, resp.Results[1].Status)
	now, ok := resp.Results[1].Value.Value().(time.Time)
	require.True(t, ok, "CurrentTime is %T", resp.Results[1].Value.Value())
	require.True(t, now.After(before) && now.Before(time.Now().Add(time.Second)), "CurrentTime %v", now)

	require.Equal(t, ua.StatusOK, resp.Results[2].Status)
	require.EqualValues(t, 0, resp.Results[2].Value.Value()) // Running

	require.Equal(t, ua.StatusBadNodeIDUnknown, resp.Results[3].Status)
	require.Equal(t, ua.StatusBadAttributeIDInvalid, resp.Results[4].Status)

	// Browse the Objects folder: Server (i=2253) is organized there.
	browse := func(max uint32) *ua.BrowseResponse {
		res, err := c.Browse(ctx, &ua.BrowseRequest{
			View:                          &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)},
			RequestedMaxReferencesPerNode: max,
			NodesToBrowse: []*ua.BrowseDescription{{
				NodeID:          ua.NewNumericNodeID(0, 85),
				BrowseDirection: ua.BrowseDirectionForward,
				ReferenceTypeID: ua.NewNumericNodeID(0, 33), // HierarchicalReferences
				IncludeSubtypes: true,
				ResultMask:      uint32(ua.BrowseResultMaskAll),
			}},
		})
		require.NoError(t, err)
		require.Len(t, res.Results, 1)
		require.Equal(t, ua.StatusOK, res.Results[0].StatusCode)
		return res
	}
	all := browse(0).Results[0]
	require.Empty(t, all.ContinuationPoint)
	var names []string
	for _, r := range all.References {
		names = append(names, r.BrowseName.Name)
	}
	require.Contains(t, names, "Server")
	require.GreaterOrEqual(t, len(names), 2, "need two references to test continuation points")

	// One reference at a time through BrowseNext yields the same references.
	first := browse(1).Results[0]
	require.Len(t, first.References, 1)
	require.NotEmpty(t, first.ContinuationPoint)
	stepped := []string{first.References[0].BrowseName.Name}
	cp := first.ContinuationPoint
	for len(cp) > 0 {
		next, err := c.BrowseNext(ctx, &ua.BrowseNextRequest{ContinuationPoints: [][]byte{cp}})
		require.NoError(t, err)
		require.Len(t, next.Results, 1)
		require.Equal(t, ua.StatusOK, next.Results[0].StatusCode)
		require.Len(t, next.Results[0].References, 1)
		stepped = append(stepped, next.Results[0].References[0].BrowseName.Name)
		cp = next.Results[0].ContinuationPoint
		require.LessOrEqual(t, len(stepped), len(names))
	}
	require.Equal(t, names, stepped)

	// A used or unknown continuation point is invalid; a released one too.
	next, err := c.BrowseNext(ctx, &ua.BrowseNextRequest{ContinuationPoints: [][]byte{first.ContinuationPoint, []byte("nope")}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusBadContinuationPointInvalid, next.Results[0].StatusCode)
	require.Equal(t, ua.StatusBadContinuationPointInvalid, next.Results[1].StatusCode)
	held := browse(1).Results[0].ContinuationPoint
	rel, err := c.BrowseNext(ctx, &ua.BrowseNextRequest{ReleaseContinuationPoints: true, ContinuationPoints: [][]byte{held}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusOK, rel.Results[0].StatusCode)
	require.Empty(t, rel.Results[0].References)
	again, err := c.BrowseNext(ctx, &ua.BrowseNextRequest{ContinuationPoints: [][]byte{held}})
	require.NoError(t, err)
	require.Equal(t, ua.StatusBadContinuationPointInvalid, again.Results[0].StatusCode)

	require.NoError(t, c.Close(ctx))
}

// TestGopcuaDiscovery checks GetEndpoints and FindServers as gopcua sees them: one
// endpoint per configured (policy, mode), most secure first, with the server certificate.
func TestGopcuaDiscovery(t *testing.T) {
	t.Parallel()
	ts := servertest.New(t, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eps, err := opcua.GetEndpoints(ctx, ts.URL)
	require.NoError(t, err)
	require.Len(t, eps, 5) // None + 2 policies × 2 modes by default
	for i, ep := range eps {
		require.Equal(t, ts.URL, ep.EndpointURL)
		require.NotEmpty(t, ep.ServerCertificate)
		require.NotEmpty(t, ep.UserIdentityTokens)
		if i > 0 {
			require.LessOrEqual(t, ep.SecurityLevel, eps[i-1].SecurityLevel)
		}
	}
	last := eps[len(eps)-1]
	require.Equal(t, ua.SecurityPolicyURINone, last.SecurityPolicyURI)
	require.Zero(t, last.SecurityLevel)
	require.Equal(t, ua.SecurityPolicyURIAes256Sha256RsaPss, eps[0].SecurityPolicyURI)
	require.Equal(t, ua.MessageSecurityModeSignAndEncrypt, eps[0].SecurityMode)

	servers, err := opcua.FindServers(ctx, ts.URL)
	require.NoError(t, err)
	require.Len(t, servers, 1)
	require.Equal(t, ts.Config.Application.ApplicationURI, servers[0].ApplicationURI)
	require.Equal(t, []string{ts.URL}, servers[0].DiscoveryURLs)
}

// TestGopcuaUserNameOnNone logs in with a UserName token over a None channel: the default
// token policy has gopcua encrypt the password with Basic256Sha256 under the server
// certificate. An unknown user and a wrong password are refused with BadUserAccessDenied.
func TestGopcuaUserNameOnNone(t *testing.T) {
	t.Parallel()
	hash, err := cheapHash("pw")
	require.NoError(t, err)
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.Users = []config.User{{Name: "bob", PasswordHash: hash}}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	c := connect(t, ctx, ts.URL, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone, ua.UserTokenTypeUserName,
		opcua.AuthUsername("bob", "pw"))
	require.NoError(t, c.Close(ctx))

	eps, err := opcua.GetEndpoints(ctx, ts.URL)
	require.NoError(t, err)
	ep, err := opcua.SelectEndpoint(eps, ua.SecurityPolicyURINone, ua.MessageSecurityModeNone)
	require.NoError(t, err)
	for _, creds := range [][2]string{{"bob", "wrong"}, {"mallory", "pw"}} {
		c, err := opcua.NewClient(ts.URL, opcua.AuthUsername(creds[0], creds[1]),
			opcua.SecurityFromEndpoint(ep, ua.UserTokenTypeUserName), opcua.AutoReconnect(false))
		require.NoError(t, err)
		require.ErrorIs(t, c.Connect(ctx), ua.StatusBadUserAccessDenied, "user %s", creds[0])
	}
}
