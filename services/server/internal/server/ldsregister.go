package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"time"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/telemetry"
)

// registerTimeout bounds one registration exchange with the discovery server.
const registerTimeout = 10 * time.Second

// startRegistration registers the server with the discovery server of
// cfg.Discovery.DiscoveryURL now and every RegisterInterval (Part 12 §4.3.4), and once ctx
// ends, unregisters it (IsOnline false). A discovery server that cannot be reached is
// logged and retried with backoff; it never stops the server. The returned channel is
// closed when the loop is done, the unregistration included.
func (s *Server) startRegistration(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if s.cfg.Discovery.DiscoveryURL == "" {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		s.registrationLoop(ctx)
	}()
	return done
}

func (s *Server) registrationLoop(ctx context.Context) {
	r := &registrar{s: s, url: s.cfg.Discovery.DiscoveryURL}
	interval := s.cfg.Discovery.RegisterInterval
	registered := false
	failures := 0
	for {
		err := r.guardedRegister(ctx, true)
		wait := interval
		switch {
		case err == nil:
			if !registered || failures > 0 {
				s.log.Info("registered with the discovery server", "url", r.url)
			}
			registered, failures = true, 0
		case ctx.Err() != nil:
		default:
			failures++
			r.endpoint = nil // the discovery server may have a new certificate
			wait = backoff(failures, interval)
			s.log.Warn("discovery server registration failed; retrying", "url", r.url, "in", wait.Round(time.Millisecond), "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if registered {
				// The server is going away: say so now rather than let the registration
				// linger until it expires.
				uctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
				if err := r.guardedRegister(uctx, false); err != nil {
					s.log.Warn("discovery server unregistration failed", "url", r.url, "err", err)
				} else {
					s.log.Info("unregistered from the discovery server", "url", r.url)
				}
				cancel()
			}
			return
		case <-t.C:
		}
	}
}

// backoff is the wait after the n-th failure in a row: 1 s doubling up to interval, with
// up to 25% jitter so that servers restarted together do not retry together.
func backoff(n int, interval time.Duration) time.Duration {
	d := time.Second << min(n-1, 16)
	d = min(d, interval)
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// registrar holds what registration keeps between rounds: the discovery server's
// endpoint, so that a renewal skips its GetEndpoints.
type registrar struct {
	s        *Server
	url      string
	endpoint *ua.EndpointDescription
}

// guardedRegister is register for the loop: a registration that panics (the client's
// code, a discovery server's answer) is reported and counts as a failure, so the loop
// retries with backoff and the server serves on.
func (r *registrar) guardedRegister(ctx context.Context, online bool) (err error) {
	defer func() {
		if v := recover(); v != nil {
			r.s.tel.Panics().Recovered(telemetry.PlaceRegistration, v)
			err = fmt.Errorf("registration panicked: %v: %w", v, status.BadInternalError)
		}
	}()
	return r.register(ctx, online)
}

// register sends RegisterServer2 (RegisterServer when the discovery server predates it)
// over a SignAndEncrypt channel authenticated with the server's certificate, as Part 4
// §5.4.5 requires.
func (r *registrar) register(ctx context.Context, online bool) error {
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	if r.endpoint == nil {
		ep, err := r.discover(ctx)
		if err != nil {
			return err
		}
		r.endpoint = ep
	}
	ch, err := r.dial(ctx, r.endpoint)
	if err != nil {
		return err
	}
	defer ch.Close()
	srv := r.registeredServer(online)
	resp, err := ch.Request(ctx, &ua.RegisterServer2Request{
		RequestHeader: ua.RequestHeader{Timestamp: codec.Now(), TimeoutHint: uint32(registerTimeout.Milliseconds())},
		Server:        srv,
		DiscoveryConfiguration: []codec.ExtensionObject{codec.NewExtensionObject(&ua.MdnsDiscoveryConfiguration{
			MdnsServerName: r.s.cfg.Application.ApplicationName, ServerCapabilities: []string{"NA"},
		})},
	})
	if errors.Is(err, status.BadServiceUnsupported) {
		resp, err = ch.Request(ctx, &ua.RegisterServerRequest{RequestHeader: ua.RequestHeader{Timestamp: codec.Now()}, Server: srv})
	}
	if err != nil {
		return err
	}
	var result status.Code
	switch m := resp.(type) {
	case *ua.RegisterServer2Response:
		result = m.ResponseHeader.ServiceResult
	case *ua.RegisterServerResponse:
		result = m.ResponseHeader.ServiceResult
	default:
		return fmt.Errorf("registration answered with %T", resp)
	}
	if result != status.Good {
		return fmt.Errorf("registration refused: %w", result)
	}
	return nil
}

func (r *registrar) registeredServer(online bool) ua.RegisteredServer {
	cfg := r.s.cfg
	return ua.RegisteredServer{
		ServerUri:     cfg.Application.ApplicationURI,
		ProductUri:    cfg.Application.ProductURI,
		ServerNames:   []codec.LocalizedText{{Text: cfg.Application.ApplicationName}},
		ServerType:    ua.ApplicationTypeServer,
		DiscoveryUrls: []string{cfg.Endpoint.EndpointURL},
		IsOnline:      online,
	}
}

// discover asks the discovery server for its endpoints and picks the
// most secure SignAndEncrypt one with a policy we have; its certificate must be trusted
// by the server's PKI like any peer's.
func (r *registrar) discover(ctx context.Context) (*ua.EndpointDescription, error) {
	eps, err := client.GetEndpoints(ctx, r.url)
	if err != nil {
		return nil, err
	}
	var best *ua.EndpointDescription
	for i := range eps {
		ep := &eps[i]
		if ep.SecurityMode != ua.MessageSecurityModeSignAndEncrypt {
			continue
		}
		if _, ok := policy.Lookup(ep.SecurityPolicyUri); !ok {
			continue
		}
		if best == nil || ep.SecurityLevel > best.SecurityLevel {
			best = ep
		}
	}
	if best == nil {
		return nil, errors.New("the discovery server offers no SignAndEncrypt endpoint")
	}
	cert, err := x509.ParseCertificate(best.ServerCertificate)
	if err != nil {
		return nil, fmt.Errorf("discovery server certificate: %w", err)
	}
	if err := r.s.pki.ValidateChain([]*x509.Certificate{cert}, pki.ValidateOptions{Usage: pki.UsageServer}); err != nil {
		return nil, fmt.Errorf("discovery server certificate: %w", err)
	}
	return best, nil
}

// dial opens a secure channel to the discovery server with ep's (signed) security.
func (r *registrar) dial(ctx context.Context, ep *ua.EndpointDescription) (*uasc.ClientChannel, error) {
	u, err := url.Parse(r.url)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	conn, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: r.url})
	if err != nil {
		return nil, err
	}
	return uasc.Dial(ctx, conn, uasc.ClientConfig{
		PolicyURI: ep.SecurityPolicyUri, Mode: ep.SecurityMode,
		Certificate: r.s.cert.Raw, Key: r.s.key, ServerCertificate: ep.ServerCertificate,
	})
}
