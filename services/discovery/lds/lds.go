// Package lds is a Local Discovery Server (Part 12 §4.3, Part 4 §5.4): servers register
// with it, and clients ask it which servers exist (FindServers) and how to reach them
// (GetEndpoints). Every answer comes from a discovery.Cache of encoded responses, the
// same one a uastack server answers its own discovery services from.
package lds

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/discovery"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// Config is the discovery service's configuration.
type Config struct {
	ApplicationURI  string
	ApplicationName string
	// EndpointURL is advertised; ListenAddress is bound.
	EndpointURL   string
	ListenAddress string
	// Hostnames go into the application certificate and are the hosts a client may call.
	Hostnames []string
	// PKIDir holds own/, trusted/, issuer/, rejected/ as for the server.
	PKIDir string
	// AutoAcceptUntrusted trusts every registering server's certificate (logged).
	AutoAcceptUntrusted bool
	// RegistrationTimeout drops a registration that is not renewed in time. Servers
	// re-register every 30 s by default (other stacks every 10 min: set it above that
	// when they register here).
	RegistrationTimeout time.Duration
	// RefreshInterval is how often the endpoints and ServiceLevel of a registered server
	// are fetched again, and semaphore files checked.
	RefreshInterval time.Duration
	// MaxChannelCount bounds the secure channels open at once; a connection beyond it is
	// refused with an ERR BadTcpNotEnoughResources before anything is read from it. Zero
	// means uasc.DefaultMaxChannelCount, the server's default.
	MaxChannelCount int
	Logger          *slog.Logger
}

// Default returns the built-in configuration: port 4840 on every interface.
func Default() Config {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	pkiDir := "pki-discovery"
	if dir, err := os.UserConfigDir(); err == nil {
		pkiDir = filepath.Join(dir, "uastack", "discovery-pki")
	}
	return Config{
		ApplicationURI:      "urn:" + host + ":uastack:discovery",
		ApplicationName:     "uastack discovery",
		EndpointURL:         "opc.tcp://" + host + ":4840",
		ListenAddress:       ":4840",
		Hostnames:           []string{host},
		PKIDir:              pkiDir,
		RegistrationTimeout: 10 * time.Minute,
		RefreshInterval:     30 * time.Second,
		MaxChannelCount:     uasc.DefaultMaxChannelCount,
	}
}

// selfKey is the discovery service's own entry in its cache.
const selfKey = "self"

// Service is a running discovery service.
type Service struct {
	cfg      Config
	log      *slog.Logger
	pki      *pki.PKI
	cert     *x509.Certificate
	channels *uasc.Server
	cache    *discovery.Cache
	now      func() time.Time

	mu   sync.Mutex // guards regs, byAddress
	regs map[string]*registration
	// byAddress finds the registration a GetEndpoints is about: the port and path of
	// each registered discovery URL (addressOf), to its registration key.
	byAddress map[string]string
	wg        sync.WaitGroup // counts fetches
}

// registration is one registered server.
type registration struct {
	server  ua.RegisteredServer
	expires time.Time
	// fetching is set while a fetch of endpoints and ServiceLevel runs; fetched is when
	// the last one ended.
	fetching bool
	fetched  time.Time
	entry    *discovery.Server
}

// New opens the PKI (creating the certificate on first start) and the secure channel
// server.
func New(cfg Config) (*Service, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.RegistrationTimeout <= 0 || cfg.RefreshInterval <= 0 {
		return nil, errors.New("lds: RegistrationTimeout and RefreshInterval must be positive")
	}
	p, err := pki.Open(cfg.PKIDir, pki.Options{Logger: log, AutoAccept: cfg.AutoAcceptUntrusted, PollInterval: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open PKI: %w", err)
	}
	cert, key, err := p.EnsureOwn(cfg.ApplicationURI, cfg.Hostnames, pki.OwnOptions{ApplicationName: cfg.ApplicationName})
	if err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("application certificate: %w", err)
	}
	s := &Service{cfg: cfg, log: log, pki: p, cert: cert, cache: discovery.NewCache(), now: time.Now, regs: make(map[string]*registration), byAddress: make(map[string]string)}
	sec := []uasc.SecurityConfig{
		{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone},
		{PolicyURI: policy.URIBasic256Sha256, Mode: ua.MessageSecurityModeSign},
		{PolicyURI: policy.URIBasic256Sha256, Mode: ua.MessageSecurityModeSignAndEncrypt},
		{PolicyURI: policy.URIAes256Sha256RsaPss, Mode: ua.MessageSecurityModeSign},
		{PolicyURI: policy.URIAes256Sha256RsaPss, Mode: ua.MessageSecurityModeSignAndEncrypt},
	}
	s.channels, err = uasc.NewServer(uasc.ServerConfig{
		Certificate: cert.Raw,
		Key:         key,
		Security:    sec,
		ValidateCertificate: func(chain []*x509.Certificate) error {
			err := p.ValidateChain(chain, pki.ValidateOptions{Usage: pki.UsageClient})
			if err != nil {
				log.Warn("registering certificate rejected", "err", err)
			}
			return err
		},
		MaxChannelCount: cfg.MaxChannelCount,
		Refused: func(r uasc.Refusal) {
			if r.MaxChannelCount > 0 {
				log.Warn("connection refused: maxChannelCount reached", "remote", r.Remote.String(), "max", r.MaxChannelCount)
			}
		},
	}, uasc.HandlerFunc(s.handle))
	if err != nil {
		_ = p.Close()
		return nil, err
	}
	s.cache.Set(selfKey, s.selfEntry(sec))
	return s, nil
}

// selfEntry describes the discovery service itself: ApplicationType DiscoveryServer and
// one endpoint per security configuration, anonymous only (it has no sessions to log
// into; Part 12 §4.3).
func (s *Service) selfEntry(sec []uasc.SecurityConfig) *discovery.Server {
	app := ua.ApplicationDescription{
		ApplicationUri:  s.cfg.ApplicationURI,
		ProductUri:      "urn:uastack.dev:discovery",
		ApplicationName: codec.LocalizedText{Text: s.cfg.ApplicationName},
		ApplicationType: ua.ApplicationTypeDiscoveryServer,
		DiscoveryUrls:   []string{s.cfg.EndpointURL},
	}
	var eps []ua.EndpointDescription
	for i := len(sec) - 1; i >= 0; i-- { // most secure first
		c := sec[i]
		level := byte(0)
		if c.Mode != ua.MessageSecurityModeNone {
			level = byte(10 * (i + 1))
		}
		eps = append(eps, ua.EndpointDescription{
			EndpointUrl: s.cfg.EndpointURL, Server: app, ServerCertificate: s.cert.Raw,
			SecurityMode: c.Mode, SecurityPolicyUri: c.PolicyURI,
			UserIdentityTokens:  []ua.UserTokenPolicy{{PolicyId: "Anonymous", TokenType: ua.UserTokenTypeAnonymous}},
			TransportProfileUri: uacp.TransportProfile, SecurityLevel: level,
		})
	}
	hosts := slices.Clone(s.cfg.Hostnames)
	if u, err := url.Parse(s.cfg.EndpointURL); err == nil {
		hosts = append(hosts, u.Hostname())
	}
	return &discovery.Server{Application: app, Endpoints: eps, Hosts: hosts, ServiceLevel: 255}
}

// Certificate returns the service's application certificate.
func (s *Service) Certificate() *x509.Certificate { return s.cert }

// Endpoints returns the service's own endpoints.
func (s *Service) Endpoints() []ua.EndpointDescription {
	e, _ := s.cache.Get(selfKey)
	return e.Endpoints
}

// Serve answers on ln until ctx ends, expiring registrations and refreshing what it knows
// of registered servers meanwhile; then it waits for the channels to end and closes the
// PKI.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	defer s.pki.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.wg.Go(func() { s.maintain(ctx) })
	err := s.channels.Serve(ctx, ln)
	cancel()
	s.wg.Wait()
	return err
}

// handle answers the discovery services; every other service is BadServiceUnsupported
// (a discovery server has no sessions).
func (s *Service) handle(ctx context.Context, req uasc.Request) {
	// Answered at once: the time the request was read stamps the response, which saves
	// a clock reading per answer.
	at := req.Received
	if at.IsZero() {
		at = s.now()
	}
	now := codec.DateTimeOf(at)
	switch m := req.Message.(type) {
	case *ua.GetEndpointsRequest:
		a := s.cache.GetEndpoints(s.endpointsKey(m.EndpointUrl), m, now)
		if a == nil { // the server asked about was just removed
			a = s.cache.GetEndpoints(selfKey, m, now)
		}
		s.respond(req, a)
		a.Release()
	case *ua.FindServersRequest:
		a := s.cache.FindServers(m, now)
		s.respond(req, a)
		a.Release()
	case *ua.RegisterServerRequest:
		code := s.register(req.Channel, m.Server)
		s.respond(req, &ua.RegisterServerResponse{ResponseHeader: header(m.RequestHeader, code, now)})
	case *ua.RegisterServer2Request:
		code := s.register(req.Channel, m.Server)
		resp := &ua.RegisterServer2Response{ResponseHeader: header(m.RequestHeader, code, now)}
		if code == status.Good {
			resp.ConfigurationResults = configurationResults(m.DiscoveryConfiguration)
		}
		s.respond(req, resp)
	default:
		h := ua.RequestHeaderOf(req.Message)
		s.respond(req, &ua.ServiceFault{ResponseHeader: header(h, status.BadServiceUnsupported, now)})
	}
}

func (s *Service) respond(req uasc.Request, msg codec.Structure) {
	if err := req.Respond(msg); err != nil {
		s.log.Debug("response not sent", "err", err)
	}
}

func header(h ua.RequestHeader, code status.Code, now codec.DateTime) ua.ResponseHeader {
	return ua.ResponseHeader{Timestamp: now, RequestHandle: h.RequestHandle, ServiceResult: code}
}

// configurationResults answers each DiscoveryConfiguration of RegisterServer2: the
// multicast (mDNS) configuration is accepted and kept with the registration, though this
// service announces nothing on multicast; anything else is not understood.
func configurationResults(cfgs []codec.ExtensionObject) []status.Code {
	out := make([]status.Code, len(cfgs))
	for i, c := range cfgs {
		if _, ok := c.Value.(*ua.MdnsDiscoveryConfiguration); !ok {
			out[i] = status.BadNotSupported
		}
	}
	return out
}

// endpointsKey returns the cache key GetEndpoints answers for: the registered server one
// of whose discovery URLs has the port and path of url, or the service itself.
func (s *Service) endpointsKey(endpointURL string) string {
	a, ok := addressOf(endpointURL)
	if !ok {
		return selfKey
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if key, ok := s.byAddress[a]; ok {
		return key
	}
	return selfKey
}

// addressOf is what identifies a discovery URL whatever host name the caller used: its
// port and path.
func addressOf(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", false
	}
	return u.Port() + strings.TrimSuffix(u.Path, "/"), true
}

// setLocked keeps reg under key with the discovery URLs it now names.
func (s *Service) setLocked(key string, reg *registration) {
	s.unindexLocked(key)
	s.regs[key] = reg
	for _, d := range reg.server.DiscoveryUrls {
		if a, ok := addressOf(d); ok {
			s.byAddress[a] = key
		}
	}
}

// removeLocked forgets the registration under key.
func (s *Service) removeLocked(key string) {
	s.unindexLocked(key)
	delete(s.regs, key)
	s.cache.Remove(key)
}

func (s *Service) unindexLocked(key string) {
	for a, k := range s.byAddress {
		if k == key {
			delete(s.byAddress, a)
		}
	}
}

// registrationKey identifies a registration: its ServerUri and first discovery URL, so
// that the nodes of a redundant set sharing one ServerUri are listed side by side.
func registrationKey(r *ua.RegisteredServer) string {
	return r.ServerUri + " " + r.DiscoveryUrls[0]
}

// checkRegistration applies the checks of Part 4 §5.4.5.2 to a RegisteredServer.
func checkRegistration(r *ua.RegisteredServer) status.Code {
	switch {
	case r.ServerUri == "":
		return status.BadServerUriInvalid
	case len(r.ServerNames) == 0:
		return status.BadServerNameMissing
	case len(r.DiscoveryUrls) == 0 || r.DiscoveryUrls[0] == "":
		return status.BadDiscoveryUrlMissing
	case r.ServerType == ua.ApplicationTypeClient:
		return status.BadInvalidArgument
	}
	return status.Good
}

// register handles RegisterServer and RegisterServer2: only a channel that authenticated
// its client with a certificate may register (Part 4 §5.4.5.1), and only for the
// ApplicationUri in that certificate, so that one trusted server cannot take over
// another's registration.
func (s *Service) register(ch *uasc.ServerChannel, r ua.RegisteredServer) status.Code {
	cert := ch.ClientCertificate()
	if ch.SecurityMode() == ua.MessageSecurityModeNone || cert == nil {
		return status.BadSecurityChecksFailed
	}
	if code := checkRegistration(&r); code != status.Good {
		return code
	}
	if !certificateNames(cert, r.ServerUri) {
		s.log.Warn("registration refused: ServerUri differs from the certificate's", "serverUri", r.ServerUri)
		return status.BadServerUriInvalid
	}
	if r.SemaphoreFilePath != "" && !semaphorePresent(r.SemaphoreFilePath) {
		return status.BadSempahoreFileMissing // sic: the schema's spelling
	}
	key := registrationKey(&r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !r.IsOnline {
		if _, ok := s.regs[key]; ok {
			s.removeLocked(key)
			s.log.Info("server unregistered", "serverUri", r.ServerUri, "url", r.DiscoveryUrls[0])
		}
		return status.Good
	}
	reg, ok := s.regs[key]
	if !ok {
		reg = &registration{}
		s.log.Info("server registered", "serverUri", r.ServerUri, "url", r.DiscoveryUrls[0])
	}
	reg.server = r
	s.setLocked(key, reg)
	reg.expires = s.now().Add(s.cfg.RegistrationTimeout)
	if reg.entry == nil {
		// Listed at once from what it told; endpoints and ServiceLevel follow the fetch.
		reg.entry = entryOf(&r, nil, 0)
		s.cache.Set(key, reg.entry)
	}
	s.fetchLocked(key, reg)
	return status.Good
}

// certificateNames reports whether cert carries uri as its ApplicationUri.
func certificateNames(cert *x509.Certificate, uri string) bool {
	for _, u := range cert.URIs {
		if u.String() == uri {
			return true
		}
	}
	return false
}

// entryOf is the cache entry of a registered server.
func entryOf(r *ua.RegisteredServer, eps []ua.EndpointDescription, level byte) *discovery.Server {
	app := ua.ApplicationDescription{
		ApplicationUri:   r.ServerUri,
		ProductUri:       r.ProductUri,
		ApplicationName:  r.ServerNames[0],
		ApplicationType:  r.ServerType,
		GatewayServerUri: r.GatewayServerUri,
		DiscoveryUrls:    r.DiscoveryUrls,
	}
	var hosts []string
	for _, d := range r.DiscoveryUrls {
		if u, err := url.Parse(d); err == nil {
			hosts = append(hosts, u.Hostname())
		}
	}
	return &discovery.Server{Application: app, Names: r.ServerNames, Endpoints: eps, Hosts: hosts, ServiceLevel: level}
}

// maintain expires registrations, checks semaphore files and refreshes fetched data
// until ctx ends.
func (s *Service) maintain(ctx context.Context) {
	tick := min(s.cfg.RefreshInterval, s.cfg.RegistrationTimeout/4, 5*time.Second)
	t := time.NewTicker(max(tick, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.sweep()
	}
}

// sweep drops expired registrations and those whose semaphore file is gone (Part 12
// §4.3.5), and starts the fetches that are due.
func (s *Service) sweep() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, r := range s.regs {
		gone := now.After(r.expires)
		if !gone && r.server.SemaphoreFilePath != "" && !semaphorePresent(r.server.SemaphoreFilePath) {
			gone = true
		}
		if gone {
			s.removeLocked(key)
			s.log.Info("registration expired", "serverUri", r.server.ServerUri, "url", r.server.DiscoveryUrls[0])
			continue
		}
		if now.Sub(r.fetched) >= s.cfg.RefreshInterval {
			s.fetchLocked(key, r)
		}
	}
}

// fetchLocked starts fetching the endpoints and ServiceLevel of r unless a fetch runs.
func (s *Service) fetchLocked(key string, r *registration) {
	if r.fetching {
		return
	}
	r.fetching = true
	target := r.server
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eps, level, err := fetch(ctx, target.DiscoveryUrls[0])
		s.mu.Lock()
		defer s.mu.Unlock()
		r.fetching = false
		r.fetched = s.now()
		if err != nil {
			s.log.Warn("endpoints of a registered server not fetched", "url", target.DiscoveryUrls[0], "err", err)
		}
		if s.regs[key] != r {
			return // unregistered meanwhile
		}
		if err != nil {
			eps, level = r.entry.Endpoints, r.entry.ServiceLevel
		}
		next := entryOf(&r.server, eps, level)
		if !sameEntry(next, r.entry) {
			r.entry = next
			s.cache.Set(key, next)
		}
	})
}

// sameEntry reports whether two entries would give the same answers.
func sameEntry(a, b *discovery.Server) bool {
	enc := func(x *discovery.Server) []byte {
		e := codec.NewEncoder(nil)
		(&ua.GetEndpointsResponse{Endpoints: x.Endpoints}).EncodeBinary(e)
		(&x.Application).EncodeBinary(e)
		for i := range x.Names {
			e.LocalizedText(x.Names[i])
		}
		e.Byte(x.ServiceLevel)
		return e.Bytes()
	}
	return string(enc(a)) == string(enc(b))
}

// fetch asks the server at url for its endpoints and, when it lets an anonymous session
// on a None endpoint read it, its ServiceLevel (Part 5 §6.3.34); 0 when it cannot be read,
// so that a server whose health is unknown is listed after its healthy peers. The session
// reuses the endpoints just fetched.
func fetch(ctx context.Context, endpointURL string) ([]ua.EndpointDescription, byte, error) {
	cache := client.NewEndpointCache()
	eps, err := cache.Get(ctx, endpointURL)
	if err != nil {
		return nil, 0, err
	}
	c, err := client.Dial(ctx, endpointURL, client.Security(policy.URINone, ua.MessageSecurityModeNone),
		client.Anonymous(), client.SessionName("ServiceLevel probe"), client.WithEndpointCache(cache),
		client.WithBackoff(client.Backoff{Attempts: 1}))
	if err != nil {
		return eps, 0, nil
	}
	defer c.Close(ctx)
	dv, err := c.ReadValue(ctx, codec.NewNumericNodeId(0, id.Server_ServiceLevel))
	if err != nil || dv.Status != status.Good {
		return eps, 0, nil
	}
	level, _ := dv.Value.Value().(byte)
	return eps, level, nil
}

// ReloadTrust reads the trusted and issuer stores again now, rather than at the next
// poll.
func (s *Service) ReloadTrust() error { return s.pki.Reload() }
