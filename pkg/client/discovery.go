package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

var errNoCertificate = errors.New("client: no application certificate (use the Certificate option)")

// dialAddress returns the host:port of an opc.tcp URL (default port 4840).
func dialAddress(endpointURL string) (addr, host string, err error) {
	u, err := url.Parse(endpointURL)
	if err != nil {
		return "", "", fmt.Errorf("client: endpoint URL %q: %w: %w", endpointURL, status.BadTcpEndpointUrlInvalid, err)
	}
	if u.Scheme != "opc.tcp" || u.Hostname() == "" {
		return "", "", fmt.Errorf("client: endpoint URL %q: not opc.tcp://host[:port]: %w", endpointURL, status.BadTcpEndpointUrlInvalid)
	}
	port := u.Port()
	if port == "" {
		port = "4840"
	}
	return net.JoinHostPort(u.Hostname(), port), u.Hostname(), nil
}

// openChannel dials TCP, runs the UACP handshake and opens a secure channel.
func openChannel(ctx context.Context, endpointURL string, cfg uasc.ClientConfig) (*uasc.ClientChannel, error) {
	addr, _, err := dialAddress(endpointURL)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("client: %w: %w", status.BadNotConnected, err)
	}
	uc, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: endpointURL})
	if err != nil {
		return nil, err
	}
	return uasc.Dial(ctx, uc, cfg)
}

// discover opens a None channel to endpointURL, sends req and closes the channel.
func discover(ctx context.Context, endpointURL string, req codec.Structure) (codec.Structure, error) {
	ch, err := openChannel(ctx, endpointURL, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	return ch.Request(ctx, req)
}

func discoveryHeader(ctx context.Context) ua.RequestHeader {
	return ua.RequestHeader{Timestamp: codec.Now(), RequestHandle: 1, TimeoutHint: timeoutHint(ctx, 10*time.Second)}
}

// GetEndpoints asks the server at endpointURL for its endpoints (Part 4 §5.4.4) over a
// SecurityPolicy None channel that it closes afterwards.
func GetEndpoints(ctx context.Context, endpointURL string) ([]ua.EndpointDescription, error) {
	resp, err := discover(ctx, endpointURL, &ua.GetEndpointsRequest{
		RequestHeader: discoveryHeader(ctx),
		EndpointUrl:   endpointURL,
	})
	if err != nil {
		return nil, statusError("GetEndpoints", resp, err)
	}
	r, ok := resp.(*ua.GetEndpointsResponse)
	if !ok {
		return nil, &StatusError{Service: "GetEndpoints", Code: status.BadUnknownResponse}
	}
	return r.Endpoints, nil
}

// FindServers asks the server or discovery server at endpointURL for the servers it knows
// (Part 4 §5.4.2); serverURIs, if any, filter by ApplicationUri.
func FindServers(ctx context.Context, endpointURL string, serverURIs ...string) ([]ua.ApplicationDescription, error) {
	resp, err := discover(ctx, endpointURL, &ua.FindServersRequest{
		RequestHeader: discoveryHeader(ctx),
		EndpointUrl:   endpointURL,
		ServerUris:    serverURIs,
	})
	if err != nil {
		return nil, statusError("FindServers", resp, err)
	}
	r, ok := resp.(*ua.FindServersResponse)
	if !ok {
		return nil, &StatusError{Service: "FindServers", Code: status.BadUnknownResponse}
	}
	return r.Servers, nil
}

// EndpointCache holds GetEndpoints answers per discovery URL, so that a reconnect, or
// the next of many clients of one server, skips discovery. It is safe for concurrent use.
// Entries stay until Forget; a client forgets its URL when the server's certificate or
// endpoints no longer match what was cached.
type EndpointCache struct {
	mu sync.Mutex // guards m
	m  map[string][]ua.EndpointDescription
}

// NewEndpointCache returns an empty cache.
func NewEndpointCache() *EndpointCache {
	return &EndpointCache{m: make(map[string][]ua.EndpointDescription)}
}

// Get returns the cached endpoints of url, asking the server if there are none. Callers
// must not modify the returned descriptions.
func (ec *EndpointCache) Get(ctx context.Context, url string) ([]ua.EndpointDescription, error) {
	ec.mu.Lock()
	eps, ok := ec.m[url]
	ec.mu.Unlock()
	if ok {
		return eps, nil
	}
	eps, err := GetEndpoints(ctx, url)
	if err != nil {
		return nil, err
	}
	ec.mu.Lock()
	ec.m[url] = eps
	ec.mu.Unlock()
	return eps, nil
}

// Forget drops the endpoints of url.
func (ec *EndpointCache) Forget(url string) {
	ec.mu.Lock()
	delete(ec.m, url)
	ec.mu.Unlock()
}

// SelectEndpoint picks the endpoint with policyURI and mode, or, when policyURI is "",
// the one with the highest SecurityLevel among the policies this client implements,
// None excluded. Only UA-TCP binary endpoints are considered.
func SelectEndpoint(eps []ua.EndpointDescription, policyURI string, mode ua.MessageSecurityMode) (ua.EndpointDescription, error) {
	var best *ua.EndpointDescription
	for i := range eps {
		ep := &eps[i]
		if ep.TransportProfileUri != "" && ep.TransportProfileUri != uacp.TransportProfile {
			continue
		}
		if _, ok := policy.Lookup(ep.SecurityPolicyUri); !ok {
			continue
		}
		if policyURI != "" {
			if ep.SecurityPolicyUri == policyURI && ep.SecurityMode == mode {
				return *ep, nil
			}
			continue
		}
		if ep.SecurityPolicyUri == policy.URINone || ep.SecurityMode == ua.MessageSecurityModeNone {
			continue
		}
		if best == nil || ep.SecurityLevel > best.SecurityLevel {
			best = ep
		}
	}
	if best == nil {
		if policyURI == "" {
			return ua.EndpointDescription{}, fmt.Errorf("client: the server offers no secured endpoint this client supports (name SecurityPolicy None explicitly to use it): %w", status.BadSecurityPolicyRejected)
		}
		return ua.EndpointDescription{}, fmt.Errorf("client: the server offers no endpoint with %s and %v: %w", policyURI, mode, status.BadSecurityPolicyRejected)
	}
	return *best, nil
}

// sameSecurity reports whether two endpoint lists offer the same (policy, mode)
// pairs: Part 4 §5.6.2 asks a client to compare CreateSession's
// ServerEndpoints with what discovery returned, which detects a downgrade of the
// unsecured GetEndpoints answer.
func sameSecurity(a, b []ua.EndpointDescription) bool {
	type key struct {
		uri  string
		mode ua.MessageSecurityMode
	}
	set := func(eps []ua.EndpointDescription) []key {
		out := make([]key, 0, len(eps))
		for _, ep := range eps {
			if ep.TransportProfileUri != "" && ep.TransportProfileUri != uacp.TransportProfile {
				continue
			}
			out = append(out, key{ep.SecurityPolicyUri, ep.SecurityMode})
		}
		slices.SortFunc(out, func(x, y key) int {
			if x.uri != y.uri {
				if x.uri < y.uri {
					return -1
				}
				return 1
			}
			return int(x.mode) - int(y.mode)
		})
		return slices.Compact(out)
	}
	return slices.Equal(set(a), set(b))
}
