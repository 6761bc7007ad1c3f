package discovery

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

const tcpProfile = "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary"

// testServer returns a Server shaped like a real one: five endpoints, each with the
// certificate and three user token policies.
func testServer(uri, url string, level byte) *Server {
	app := ua.ApplicationDescription{
		ApplicationUri:  uri,
		ProductUri:      "urn:uastack.dev:server",
		ApplicationName: codec.LocalizedText{Text: "plant " + uri},
		ApplicationType: ua.ApplicationTypeServer,
		DiscoveryUrls:   []string{url},
	}
	cert := bytes.Repeat([]byte{0x30}, 1100)
	tokens := []ua.UserTokenPolicy{
		{PolicyId: "Anonymous", TokenType: ua.UserTokenTypeAnonymous},
		{PolicyId: "UserName", TokenType: ua.UserTokenTypeUserName, SecurityPolicyUri: "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256"},
		{PolicyId: "Certificate", TokenType: ua.UserTokenTypeCertificate},
	}
	var eps []ua.EndpointDescription
	for i, sec := range []struct {
		policy string
		mode   ua.MessageSecurityMode
	}{
		{"http://opcfoundation.org/UA/SecurityPolicy#Aes256_Sha256_RsaPss", ua.MessageSecurityModeSignAndEncrypt},
		{"http://opcfoundation.org/UA/SecurityPolicy#Aes256_Sha256_RsaPss", ua.MessageSecurityModeSign},
		{"http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256", ua.MessageSecurityModeSignAndEncrypt},
		{"http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256", ua.MessageSecurityModeSign},
		{"http://opcfoundation.org/UA/SecurityPolicy#None", ua.MessageSecurityModeNone},
	} {
		eps = append(eps, ua.EndpointDescription{
			EndpointUrl: url, Server: app, ServerCertificate: cert, SecurityMode: sec.mode,
			SecurityPolicyUri: sec.policy, UserIdentityTokens: tokens, TransportProfileUri: tcpProfile,
			SecurityLevel: byte(50 - 10*i),
		})
	}
	return &Server{Application: app, Endpoints: eps, Hosts: []string{"plant-a", "127.0.0.1", "::1"}, ServiceLevel: level}
}

func decodeAnswer[T codec.Structure](t *testing.T, a *Answer) T {
	t.Helper()
	msg, err := a.Decode()
	require.NoError(t, err)
	out, ok := msg.(T)
	require.True(t, ok, "answer holds %T", msg)
	return out
}

func TestGetEndpointsAnswersWithCallersHandleAndTime(t *testing.T) {
	c := NewCache()
	srv := testServer("urn:a", "opc.tcp://plant-a:4840", 200)
	c.Set("self", srv)
	for handle := uint32(1); handle <= 3; handle++ {
		now := codec.DateTimeOf(time.Date(2026, 11, 29, 12, 0, int(handle), 0, time.UTC))
		a := c.GetEndpoints("self", &ua.GetEndpointsRequest{RequestHeader: ua.RequestHeader{RequestHandle: handle}, EndpointUrl: "opc.tcp://plant-a:4840"}, now)
		require.NotNil(t, a)
		resp := decodeAnswer[*ua.GetEndpointsResponse](t, a)
		a.Release()
		require.Equal(t, handle, resp.ResponseHeader.RequestHandle)
		require.Equal(t, now, resp.ResponseHeader.Timestamp)
		require.Equal(t, srv.Endpoints, resp.Endpoints)
	}
	require.Nil(t, c.GetEndpoints("other", &ua.GetEndpointsRequest{}, codec.Now()))
}

func TestGetEndpointsUsesTheHostTheClientCalled(t *testing.T) {
	c := NewCache()
	c.Set("self", testServer("urn:a", "opc.tcp://plant-a:4840/ua", 200))
	for _, tc := range []struct{ called, want string }{
		{"opc.tcp://127.0.0.1:4840/ua", "opc.tcp://127.0.0.1:4840/ua"},
		{"opc.tcp://PLANT-A:4840", "opc.tcp://PLANT-A:4840/ua"},
		{"opc.tcp://[::1]:4840", "opc.tcp://[::1]:4840/ua"},
		{"opc.tcp://elsewhere:4840", "opc.tcp://plant-a:4840/ua"}, // unknown host: the default
		{"", "opc.tcp://plant-a:4840/ua"},
		{"opc.tcp://127.0.0.1:4840/ua", "opc.tcp://127.0.0.1:4840/ua"}, // now kept for this URL
		{"opc.tcp://PLANT-A:4840", "opc.tcp://PLANT-A:4840/ua"},
	} {
		a := c.GetEndpoints("self", &ua.GetEndpointsRequest{EndpointUrl: tc.called}, codec.Now())
		resp := decodeAnswer[*ua.GetEndpointsResponse](t, a)
		a.Release()
		require.Len(t, resp.Endpoints, 5, tc.called)
		for _, ep := range resp.Endpoints {
			require.Equal(t, tc.want, ep.EndpointUrl, tc.called)
			require.Equal(t, []string{tc.want}, ep.Server.DiscoveryUrls, tc.called)
		}
	}
}

func TestGetEndpointsFiltersByTransportProfile(t *testing.T) {
	c := NewCache()
	srv := testServer("urn:a", "opc.tcp://plant-a:4840", 200)
	srv.Endpoints[4].TransportProfileUri = "http://opcfoundation.org/UA-Profile/Transport/https-uabinary"
	c.Set("self", srv)
	count := func(profiles ...string) int {
		a := c.GetEndpoints("self", &ua.GetEndpointsRequest{ProfileUris: profiles}, codec.Now())
		defer a.Release()
		return len(decodeAnswer[*ua.GetEndpointsResponse](t, a).Endpoints)
	}
	require.Equal(t, 5, count())
	require.Equal(t, 4, count(tcpProfile))
	require.Equal(t, 1, count("http://opcfoundation.org/UA-Profile/Transport/https-uabinary"))
	require.Equal(t, 5, count(tcpProfile, "http://opcfoundation.org/UA-Profile/Transport/https-uabinary"))
	require.Equal(t, 0, count("urn:unknown-profile"))
}

func TestAnswersFollowLocaleIds(t *testing.T) {
	c := NewCache()
	srv := testServer("urn:a", "opc.tcp://plant-a:4840", 200)
	srv.Names = []codec.LocalizedText{{Locale: "en", Text: "Plant A"}, {Locale: "de", Text: "Anlage A"}}
	c.Set("self", srv)
	name := func(locales ...string) string {
		a := c.GetEndpoints("self", &ua.GetEndpointsRequest{LocaleIds: locales}, codec.Now())
		defer a.Release()
		return decodeAnswer[*ua.GetEndpointsResponse](t, a).Endpoints[0].Server.ApplicationName.Text
	}
	require.Equal(t, "Anlage A", name("de"))
	require.Equal(t, "Plant A", name("en"))
	require.Equal(t, "Plant A", name("fr"), "no match: the first name")
	require.Equal(t, "Plant A", name())

	a := c.FindServers(&ua.FindServersRequest{LocaleIds: []string{"de"}}, codec.Now())
	defer a.Release()
	require.Equal(t, "Anlage A", decodeAnswer[*ua.FindServersResponse](t, a).Servers[0].ApplicationName.Text)
}

func TestFindServersOrdersARedundantSetByServiceLevel(t *testing.T) {
	c := NewCache()
	c.Set("lds", &Server{Application: ua.ApplicationDescription{ApplicationUri: "urn:lds", ApplicationType: ua.ApplicationTypeDiscoveryServer}})
	c.Set("a1", testServer("urn:cluster", "opc.tcp://node1:4840", 100))
	c.Set("other", testServer("urn:other", "opc.tcp://other:4840", 255))
	c.Set("a2", testServer("urn:cluster", "opc.tcp://node2:4840", 250))
	c.Set("a3", testServer("urn:cluster", "opc.tcp://node3:4840", 180))
	urls := func(uris ...string) []string {
		a := c.FindServers(&ua.FindServersRequest{ServerUris: uris}, codec.Now())
		defer a.Release()
		var out []string
		for _, s := range decodeAnswer[*ua.FindServersResponse](t, a).Servers {
			out = append(out, s.ApplicationUri+" "+fmt.Sprint(s.DiscoveryUrls))
		}
		return out
	}
	require.Equal(t, []string{
		"urn:lds []",
		"urn:cluster [opc.tcp://node2:4840]",
		"urn:cluster [opc.tcp://node3:4840]",
		"urn:cluster [opc.tcp://node1:4840]",
		"urn:other [opc.tcp://other:4840]",
	}, urls())
	require.Equal(t, []string{
		"urn:cluster [opc.tcp://node2:4840]",
		"urn:cluster [opc.tcp://node3:4840]",
		"urn:cluster [opc.tcp://node1:4840]",
	}, urls("urn:cluster"))
	require.Empty(t, urls("urn:nobody"))

	// A new ServiceLevel reorders the set; a removed node leaves it.
	srv, ok := c.Get("a1")
	require.True(t, ok)
	up := *srv
	up.ServiceLevel = 255
	c.Set("a1", &up)
	c.Remove("a2")
	require.Equal(t, []string{
		"urn:cluster [opc.tcp://node1:4840]",
		"urn:cluster [opc.tcp://node3:4840]",
	}, urls("urn:cluster"))
	require.Equal(t, []string{"lds", "a1", "other", "a3"}, c.Keys())
}

func TestSetReplacesKeptAnswers(t *testing.T) {
	c := NewCache()
	c.Set("self", testServer("urn:a", "opc.tcp://plant-a:4840", 200))
	first := c.GetEndpoints("self", &ua.GetEndpointsRequest{}, codec.Now())
	require.Len(t, decodeAnswer[*ua.GetEndpointsResponse](t, first).Endpoints, 5)
	first.Release()

	// A renewed certificate (or any change) is in the next answer.
	srv := testServer("urn:a", "opc.tcp://plant-a:4840", 200)
	for i := range srv.Endpoints {
		srv.Endpoints[i].ServerCertificate = []byte("renewed")
	}
	c.Set("self", srv)
	a := c.GetEndpoints("self", &ua.GetEndpointsRequest{}, codec.Now())
	defer a.Release()
	for _, ep := range decodeAnswer[*ua.GetEndpointsResponse](t, a).Endpoints {
		require.Equal(t, []byte("renewed"), ep.ServerCertificate)
	}
}

func TestConcurrentAnswersAndChanges(t *testing.T) {
	c := NewCache()
	c.Set("self", testServer("urn:a", "opc.tcp://plant-a:4840", 1))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				a := c.GetEndpoints("self", &ua.GetEndpointsRequest{LocaleIds: []string{fmt.Sprint(g, i%7)}}, codec.Now())
				resp := decodeAnswer[*ua.GetEndpointsResponse](t, a)
				a.Release()
				require.Len(t, resp.Endpoints, 5)
				f := c.FindServers(&ua.FindServersRequest{}, codec.Now())
				require.NotEmpty(t, decodeAnswer[*ua.FindServersResponse](t, f).Servers)
				f.Release()
			}
		})
	}
	for i := range 50 {
		c.Set("self", testServer("urn:a", "opc.tcp://plant-a:4840", byte(i)))
		c.Set(fmt.Sprint("peer", i%5), testServer("urn:b", "opc.tcp://b:4840", byte(i)))
	}
	wg.Wait()

	// After the last change every answer is the last server's.
	f := c.FindServers(&ua.FindServersRequest{}, codec.Now())
	defer f.Release()
	require.Len(t, decodeAnswer[*ua.FindServersResponse](t, f).Servers, 6)
}

// TestCachedAnswerAllocatesNothing checks the cost the package exists for. Under the
// race detector sync.Pool drops a quarter of what is put back, so the bound is below one
// allocation per answer rather than zero; building an answer takes dozens.
func TestCachedAnswerAllocatesNothing(t *testing.T) {
	c := NewCache()
	c.Set("self", testServer("urn:a", "opc.tcp://plant-a:4840", 200))
	req := &ua.GetEndpointsRequest{EndpointUrl: "opc.tcp://127.0.0.1:4840"}
	e := codec.NewEncoder(make([]byte, 0, 16<<10))
	now := codec.Now()
	allocs := testing.AllocsPerRun(1000, func() {
		a := c.GetEndpoints("self", req, now)
		e.Reset(e.Bytes())
		a.EncodeBinary(e)
		a.Release()
	})
	require.Less(t, allocs, 0.5)
	require.NoError(t, e.Err())
}

func TestGetEndpointsOfARedundantSetHealthiestFirst(t *testing.T) {
	c := NewCache()
	c.Set("n1", testServer("urn:cluster", "opc.tcp://node1:4840", 100))
	c.Set("n2", testServer("urn:cluster", "opc.tcp://node2:4840", 250))
	c.Set("x", testServer("urn:other", "opc.tcp://other:4840", 255))
	c.Set("n3", testServer("urn:cluster", "opc.tcp://node3:4840", 180))
	urls := func(key string) []string {
		a := c.GetEndpoints(key, &ua.GetEndpointsRequest{ProfileUris: []string{tcpProfile}}, codec.Now())
		defer a.Release()
		var out []string
		for _, ep := range decodeAnswer[*ua.GetEndpointsResponse](t, a).Endpoints {
			if len(out) == 0 || out[len(out)-1] != ep.EndpointUrl {
				out = append(out, ep.EndpointUrl)
			}
		}
		return out
	}
	want := []string{"opc.tcp://node2:4840", "opc.tcp://node3:4840", "opc.tcp://node1:4840"}
	require.Equal(t, want, urls("n1"))
	require.Equal(t, want, urls("n3"))
	require.Equal(t, []string{"opc.tcp://other:4840"}, urls("x"))
}

// TestManyCallerURLs asks with more distinct URLs than a server's answers are kept for:
// the kept list starts over, and every answer still carries the caller's host.
func TestManyCallerURLs(t *testing.T) {
	c := NewCache()
	c.Set("self", testServer("urn:a", "opc.tcp://plant-a:4840/ua", 200))
	for round := range 2 {
		for i := range 3 * maxKept {
			host := "plant-a"
			if i%2 == 1 {
				host = "127.0.0.1"
			}
			url := fmt.Sprintf("opc.tcp://%s:%d", host, 4000+i)
			a := c.GetEndpoints("self", &ua.GetEndpointsRequest{EndpointUrl: url}, codec.Now())
			resp := decodeAnswer[*ua.GetEndpointsResponse](t, a)
			a.Release()
			require.Equal(t, "opc.tcp://"+host+":4840/ua", resp.Endpoints[0].EndpointUrl, "round %d, %s", round, url)
		}
	}
	list := c.view.Load().servers["self"].answers.Load()
	require.NotNil(t, list)
	require.LessOrEqual(t, len(*list), maxKept)
}
