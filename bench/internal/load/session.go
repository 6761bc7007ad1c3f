package load

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
)

// Target is what every Session of a run connects to: the server URL and the endpoint
// chosen from its GetEndpoints answer.
type Target struct {
	URL        string
	Endpoint   ua.EndpointDescription
	serverCert *x509.Certificate
	tokenID    string // the anonymous UserTokenPolicy's PolicyId
	id         *uaserver.Identity
}

// NewTarget fetches the endpoints of url and chooses the one with policyURI and mode.
// The client presents id's certificate (uaserver.Start makes the server trust it).
func NewTarget(ctx context.Context, url, policyURI string, mode ua.MessageSecurityMode, id *uaserver.Identity) (*Target, error) {
	eps, err := getEndpoints(ctx, url)
	if err != nil {
		return nil, err
	}
	var ep ua.EndpointDescription
	for _, e := range eps {
		if e.SecurityPolicyUri == policyURI && e.SecurityMode == mode {
			ep = e
		}
	}
	if ep.EndpointUrl == "" {
		return nil, fmt.Errorf("load: no endpoint %s %v: %w", policyURI, mode, status.BadSecurityPolicyRejected)
	}
	t := &Target{URL: url, Endpoint: ep, id: id}
	if policyURI != policy.URINone {
		// The certificate field may hold a chain: the leaf comes first.
		certs, err := x509.ParseCertificates(ep.ServerCertificate)
		if err != nil || len(certs) == 0 {
			return nil, fmt.Errorf("load: server certificate: %w", err)
		}
		t.serverCert = certs[0]
	}
	for _, p := range ep.UserIdentityTokens {
		if p.TokenType == ua.UserTokenTypeAnonymous {
			t.tokenID = p.PolicyId
		}
	}
	return t, nil
}

// getEndpoints asks the server at url for its endpoints over a None channel.
func getEndpoints(ctx context.Context, url string) ([]ua.EndpointDescription, error) {
	ch, _, err := dialChannel(ctx, url, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone}, Conn{})
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	var r *ua.GetEndpointsResponse
	err = call(ctx, ch, "GetEndpoints", &ua.GetEndpointsRequest{
		RequestHeader: ua.RequestHeader{Timestamp: codec.Now()}, EndpointUrl: url,
	}, &r)
	if err != nil {
		return nil, err
	}
	return r.Endpoints, nil
}

// dialChannel connects to the opc.tcp URL as how says and opens a secure channel with
// cfg. It returns the TCP connection too (wrapped, if how wraps it), for Drop.
func dialChannel(ctx context.Context, endpoint string, cfg uasc.ClientConfig, how Conn) (*uasc.ClientChannel, net.Conn, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, nil, err
	}
	d := net.Dialer{}
	if how.Local != nil {
		d.LocalAddr = how.Local
	}
	nc, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, nil, err
	}
	if how.Wrap != nil {
		nc = how.Wrap(nc)
	}
	uc, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: endpoint})
	if err != nil {
		return nil, nil, err
	}
	ch, err := uasc.Dial(ctx, uc, cfg)
	if err != nil {
		return nil, nil, err
	}
	return ch, nc, nil
}

// Conn says how a Session connects: from which local address (nil: the one the system
// chooses) and through which wrapper of the TCP connection (nil: none). On loopback any
// address of 127.0.0.0/8 can be the source, so that one machine can play many peers to a
// server that counts connections per source address.
type Conn struct {
	Local *net.TCPAddr
	Wrap  func(net.Conn) net.Conn
}

// Session is one secure channel with at most one session and one subscription. Publish
// loops and Reads may run concurrently with each other; the other methods are called from
// one goroutine.
type Session struct {
	t           *Target
	nc          net.Conn
	ch          *uasc.ClientChannel
	token       codec.NodeId
	serverNonce []byte
	// SubscriptionID is set by Subscribe.
	SubscriptionID uint32

	mu   sync.Mutex // guards acks
	acks []ua.SubscriptionAcknowledgement
}

// header is a RequestHeader for the session; TimeoutHint 0 means none (Part 4, RequestHeader).
func (s *Session) header() ua.RequestHeader {
	return ua.RequestHeader{AuthenticationToken: s.token, Timestamp: codec.Now()}
}

// Dial opens a secure channel to t and creates and activates an anonymous session on it
// (Part 4 §5.6.2, §5.6.3) with a session timeout of 10 minutes, signing with the client
// key on a secured channel. The server's signature is not checked: the load client
// measures the server, it does not guard it.
func Dial(ctx context.Context, t *Target) (*Session, error) {
	return DialAs(ctx, t, Conn{})
}

// DialAs is Dial connecting as how says.
func DialAs(ctx context.Context, t *Target, how Conn) (*Session, error) {
	s, err := Open(ctx, t, how)
	if err != nil {
		return nil, err
	}
	if err := s.Create(ctx, 10*time.Minute); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.Activate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Open connects to t as how says and opens a secure channel, without a session: the
// first step of Dial, for a client that goes on step by step (Create, Activate) and may
// stop between them.
func Open(ctx context.Context, t *Target, how Conn) (*Session, error) {
	cfg := uasc.ClientConfig{PolicyURI: t.Endpoint.SecurityPolicyUri, Mode: t.Endpoint.SecurityMode}
	if t.serverCert != nil {
		cfg.Certificate, cfg.Key, cfg.ServerCertificate = t.id.DER, t.id.Key, t.serverCert.Raw
	}
	ch, nc, err := dialChannel(ctx, t.URL, cfg, how)
	if err != nil {
		return nil, err
	}
	return &Session{t: t, nc: nc, ch: ch}, nil
}

// Create sends CreateSession with the requested session timeout (Part 4 §5.6.2),
// presenting the client certificate on a secured channel.
func (s *Session) Create(ctx context.Context, timeout time.Duration) error {
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	req := &ua.CreateSessionRequest{
		RequestHeader: s.header(),
		ClientDescription: ua.ApplicationDescription{
			ApplicationUri: s.t.id.URI, ApplicationName: codec.LocalizedText{Text: "uastack bench load"},
			ApplicationType: ua.ApplicationTypeClient,
		},
		EndpointUrl:             s.t.URL,
		SessionName:             "load",
		ClientNonce:             nonce,
		RequestedSessionTimeout: float64(timeout / time.Millisecond),
	}
	if s.t.serverCert != nil {
		req.ClientCertificate = s.t.id.DER
	}
	var cr *ua.CreateSessionResponse
	if err := s.call(ctx, "CreateSession", req, &cr); err != nil {
		return err
	}
	s.token, s.serverNonce = cr.AuthenticationToken, cr.ServerNonce
	return nil
}

// Activate sends ActivateSession with an anonymous identity (Part 4 §5.6.3), signing the
// server certificate and nonce with the client key on a secured channel.
func (s *Session) Activate(ctx context.Context) error {
	act := &ua.ActivateSessionRequest{
		RequestHeader:     s.header(),
		UserIdentityToken: codec.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyId: s.t.tokenID}),
	}
	if s.t.serverCert != nil {
		sig, err := sign(s.t.Endpoint.SecurityPolicyUri, s.t.id.Key, s.t.serverCert.Raw, s.serverNonce)
		if err != nil {
			return err
		}
		act.ClientSignature = sig
	}
	var ar *ua.ActivateSessionResponse
	return s.call(ctx, "ActivateSession", act, &ar)
}

// sign signs a || b with key under the policy (Part 4 §7.37 SignatureData).
func sign(uri string, key crypto.Signer, a, b []byte) (ua.SignatureData, error) {
	pol, _ := policy.Lookup(uri)
	asym, err := pol.NewAsymmetric(key, nil)
	if err != nil {
		return ua.SignatureData{}, err
	}
	sig, err := asym.Sign(nil, append(append(make([]byte, 0, len(a)+len(b)), a...), b...))
	if err != nil {
		return ua.SignatureData{}, err
	}
	return ua.SignatureData{Algorithm: pol.Info().AsymmetricSignatureURI, Signature: sig}, nil
}

// call sends req and stores the response, of type R, in *out; a bad ServiceResult is an
// error.
func call[R codec.Structure](ctx context.Context, ch *uasc.ClientChannel, service string, req codec.Structure, out *R) error {
	resp, err := ch.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("load: %s: %w", service, err)
	}
	r, ok := resp.(R)
	if !ok {
		return fmt.Errorf("load: %s answered with %T: %w", service, resp, status.BadUnknownResponse)
	}
	*out = r
	return nil
}

func (s *Session) call(ctx context.Context, service string, req codec.Structure, out any) error {
	switch o := out.(type) {
	case **ua.CreateSessionResponse:
		return check(call(ctx, s.ch, service, req, o), service, func() status.Code { return (*o).ResponseHeader.ServiceResult })
	case **ua.ActivateSessionResponse:
		return check(call(ctx, s.ch, service, req, o), service, func() status.Code { return (*o).ResponseHeader.ServiceResult })
	case **ua.CreateSubscriptionResponse:
		return check(call(ctx, s.ch, service, req, o), service, func() status.Code { return (*o).ResponseHeader.ServiceResult })
	case **ua.CreateMonitoredItemsResponse:
		return check(call(ctx, s.ch, service, req, o), service, func() status.Code { return (*o).ResponseHeader.ServiceResult })
	case **ua.WriteResponse:
		return check(call(ctx, s.ch, service, req, o), service, func() status.Code { return (*o).ResponseHeader.ServiceResult })
	case **ua.ReadResponse:
		return check(call(ctx, s.ch, service, req, o), service, func() status.Code { return (*o).ResponseHeader.ServiceResult })
	case **ua.CloseSessionResponse:
		return check(call(ctx, s.ch, service, req, o), service, func() status.Code { return (*o).ResponseHeader.ServiceResult })
	}
	return fmt.Errorf("load: %s: response type %T", service, out)
}

func check(err error, service string, result func() status.Code) error {
	if err != nil {
		return err
	}
	if c := result(); c.IsBad() {
		return fmt.Errorf("load: %s: %w", service, c)
	}
	return nil
}

// Item is a monitored item to create: a Value attribute and its sampling interval in ms.
type Item struct {
	Node     codec.NodeId
	Sampling float64
	Queue    uint32
}

// Subscribe creates a subscription with the publishing interval and the items, in
// Reporting mode with client handles 0, 1, ... in the order of items, at most perCall in
// one CreateMonitoredItems. Keep-alive count 10, lifetime count 60.
func (s *Session) Subscribe(ctx context.Context, interval time.Duration, items []Item, perCall int) error {
	var sr *ua.CreateSubscriptionResponse
	if err := s.call(ctx, "CreateSubscription", &ua.CreateSubscriptionRequest{
		RequestHeader:               s.header(),
		RequestedPublishingInterval: float64(interval) / float64(time.Millisecond),
		RequestedLifetimeCount:      60,
		RequestedMaxKeepAliveCount:  10,
		PublishingEnabled:           true,
	}, &sr); err != nil {
		return err
	}
	s.SubscriptionID = sr.SubscriptionId
	for start := 0; start < len(items); start += perCall {
		batch := items[start:min(start+perCall, len(items))]
		reqs := make([]ua.MonitoredItemCreateRequest, len(batch))
		for i, it := range batch {
			reqs[i] = ua.MonitoredItemCreateRequest{
				ItemToMonitor:  ua.ReadValueId{NodeId: it.Node, AttributeId: 13}, // Value
				MonitoringMode: ua.MonitoringModeReporting,
				RequestedParameters: ua.MonitoringParameters{
					ClientHandle: uint32(start + i), SamplingInterval: it.Sampling, QueueSize: it.Queue, DiscardOldest: true,
				},
			}
		}
		var mr *ua.CreateMonitoredItemsResponse
		if err := s.call(ctx, "CreateMonitoredItems", &ua.CreateMonitoredItemsRequest{
			RequestHeader: s.header(), SubscriptionId: s.SubscriptionID,
			TimestampsToReturn: ua.TimestampsToReturnSource, ItemsToCreate: reqs,
		}, &mr); err != nil {
			return err
		}
		if len(mr.Results) != len(reqs) {
			return fmt.Errorf("load: CreateMonitoredItems: %d results for %d items", len(mr.Results), len(reqs))
		}
		for i, r := range mr.Results {
			if r.StatusCode.IsBad() {
				return fmt.Errorf("load: CreateMonitoredItems %v: %w", batch[i].Node, r.StatusCode)
			}
		}
	}
	return nil
}

// Publish sends Publish requests one after another until ctx ends or one fails, calling
// onData for every MonitoredItemNotification received (on this goroutine) and
// acknowledging every NotificationMessage in the next request. Run it on depth
// goroutines to keep depth Publishes outstanding. It returns nil when ctx ended.
func (s *Session) Publish(ctx context.Context, onData func(handle uint32, dv *codec.DataValue)) error {
	for ctx.Err() == nil {
		s.mu.Lock()
		req := &ua.PublishRequest{RequestHeader: s.header(), SubscriptionAcknowledgements: s.acks}
		s.acks = nil
		s.mu.Unlock()
		resp, err := s.ch.Request(ctx, req)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("load: Publish: %w", err)
		}
		r, ok := resp.(*ua.PublishResponse)
		if !ok {
			return fmt.Errorf("load: Publish answered with %T", resp)
		}
		if c := r.ResponseHeader.ServiceResult; c.IsBad() {
			return fmt.Errorf("load: Publish: %w", c)
		}
		msg := &r.NotificationMessage
		if len(msg.NotificationData) == 0 {
			continue // a keep-alive: its sequence number is the next one, not to acknowledge
		}
		s.mu.Lock()
		s.acks = append(s.acks, ua.SubscriptionAcknowledgement{SubscriptionId: r.SubscriptionId, SequenceNumber: msg.SequenceNumber})
		s.mu.Unlock()
		for i := range msg.NotificationData {
			dc, ok := msg.NotificationData[i].Value.(*ua.DataChangeNotification)
			if !ok {
				continue
			}
			for j := range dc.MonitoredItems {
				onData(dc.MonitoredItems[j].ClientHandle, &dc.MonitoredItems[j].Value)
			}
		}
	}
	return nil
}

// Write writes v to the Value of node.
func (s *Session) Write(ctx context.Context, node codec.NodeId, v codec.Variant) error {
	var wr *ua.WriteResponse
	if err := s.call(ctx, "Write", &ua.WriteRequest{
		RequestHeader: s.header(),
		NodesToWrite:  []ua.WriteValue{{NodeId: node, AttributeId: 13, Value: codec.DataValue{Value: v}}},
	}, &wr); err != nil {
		return err
	}
	if len(wr.Results) != 1 {
		return errors.New("load: Write: no result")
	}
	if wr.Results[0].IsBad() {
		return fmt.Errorf("load: Write %v: %w", node, wr.Results[0])
	}
	return nil
}

// Err returns why the session's channel ended, or nil while it is open.
func (s *Session) Err() error { return s.ch.Err() }

// Read reads the Value attribute of the nodes (Part 4 §5.10.2) and returns the results
// in their order.
func (s *Session) Read(ctx context.Context, nodes ...codec.NodeId) ([]codec.DataValue, error) {
	ids := make([]ua.ReadValueId, len(nodes))
	for i, n := range nodes {
		ids[i] = ua.ReadValueId{NodeId: n, AttributeId: 13} // Value
	}
	var rr *ua.ReadResponse
	if err := s.call(ctx, "Read", &ua.ReadRequest{
		RequestHeader: s.header(), TimestampsToReturn: ua.TimestampsToReturnNeither, NodesToRead: ids,
	}, &rr); err != nil {
		return nil, err
	}
	if len(rr.Results) != len(nodes) {
		return nil, fmt.Errorf("load: Read: %d results for %d nodes", len(rr.Results), len(nodes))
	}
	return rr.Results, nil
}

// CloseSession closes the session and deletes its subscriptions (Part 4 §5.6.4); the
// channel stays open.
func (s *Session) CloseSession(ctx context.Context) error {
	var cr *ua.CloseSessionResponse
	return s.call(ctx, "CloseSession", &ua.CloseSessionRequest{RequestHeader: s.header(), DeleteSubscriptions: true}, &cr)
}

// Close closes the channel (CloseSecureChannel) without closing the session: the
// server's own cleanup is not what the load suites measure.
func (s *Session) Close() { s.ch.Close() }

// Drop closes the TCP connection without a word, as a client that crashed or lost its
// network: the server learns of it only from the failed read, and the session, if any, is
// left to its timeout.
func (s *Session) Drop() {
	_ = s.nc.Close()
	s.ch.Close()
}

// SecurityOf maps a suite's -security flag ("Basic256Sha256", meaning SignAndEncrypt, or
// "None", any case) to a policy URI and mode.
func SecurityOf(name string) (string, ua.MessageSecurityMode, error) {
	switch strings.ToLower(name) {
	case "basic256sha256":
		return policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt, nil
	case "none":
		return policy.URINone, ua.MessageSecurityModeNone, nil
	}
	return "", 0, fmt.Errorf("unknown -security %q", name)
}
