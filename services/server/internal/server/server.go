package server

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/admission"
	"uastack.dev/services/server/internal/alarms"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/demo"
	"uastack.dev/services/server/internal/diagnostics"
	"uastack.dev/services/server/internal/hosting"
	"uastack.dev/services/server/internal/mirror"
	"uastack.dev/services/server/internal/nodesets"
	"uastack.dev/services/server/internal/owner"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/routing"
	"uastack.dev/services/server/internal/session"
	"uastack.dev/services/server/internal/subscription"
	"uastack.dev/services/server/internal/telemetry"
)

// trustPollInterval is how often the PKI folders are checked for certificates moved in or
// out by hand.
const trustPollInterval = 5 * time.Second

// Options are the parts of a Server that do not come from the configuration.
type Options struct {
	// Logger receives the server's records; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Managers are in-process node managers mounted after the built-in namespaces: each
	// URI a manager's Namespaces returns gets the next index of the NamespaceArray. A
	// manager answers the Read, Write, Call and Browse items of its namespaces for the
	// nodemgr capabilities it implements, through the request queue, so it may complete
	// from another goroutine; a nodemgr.Mounter hangs its nodes below the Objects folder.
	// A URI served twice is an error.
	Managers []nodemgr.Manager
	// Kinds are node-manager kinds for the entries of addressSpace.nodeManagers; a type
	// given here replaces the build's own (package hosting: wasm, process, builtin).
	// Configured managers are mounted before Managers.
	Kinds []routing.Kind
}

// Server is an OPC UA server built from a checked configuration. Create it with New,
// run it with Serve and release it with Close. Its methods are safe for concurrent use.
type Server struct {
	cfg       *config.Config
	log       *slog.Logger
	now       func() time.Time
	pki       *pki.PKI
	cert      *x509.Certificate
	key       *rsa.PrivateKey
	endpoints []ua.EndpointDescription
	tokens    []ua.UserTokenPolicy
	disc      discoveryAnswers // the encoded GetEndpoints and FindServers answers
	space     *addrspace.Space
	sessions  *session.Table
	// failedLogins locks out clients that fail ActivateSession too often.
	failedLogins *session.Lockout
	diag         *diagnostics.Diagnostics
	subs         *subscription.Engine
	// mirror keeps the sessions and subscriptions in the redundant set (mirror.*); nil
	// for a lone server.
	mirror     *mirror.Mirror
	eventTypes *addrspace.EventTypes
	events     *events
	demo       *demo.Demo // nil when the demo namespace is off
	channels   *uasc.Server
	// retained is the reassembly budget the channels share (limits.maxRetainedBytes).
	retained  *uasc.Budget
	startTime codec.DateTime

	// admission decides who may connect, establish a session and queue requests, and
	// how clients share each stage (limits.isolationProfile).
	admission *admission.Controller
	// handshakes is the lane of asymmetric cryptography (limits.maxConcurrentHandshakes)
	// that OpenSecureChannel and session establishment take turns of.
	handshakes *admission.Lane
	// rejections rate-limits the log lines of admission refusals.
	rejections *telemetry.LogLimiter
	// tel is the metrics, served on /metrics and pushed over OTLP (run.go).
	tel *telemetry.Telemetry
	// latency is the answer-time histogram of each service of the service table, at the
	// numeric id of its request's binary encoding (served): a slice, not a map, on the
	// path of every answer.
	latency []timedService
	// realClock says that now is time.Now, so a request's Received time has a monotonic
	// reading to take the answer time from.
	realClock bool

	// routes maps each namespace to the node manager that serves it.
	routes *routing.Routes

	// hist is the history store and its recorder (history.*); nil with history.store off.
	hist *historian

	// red is the server's place in a redundant set and its ServiceLevel (redundancy.go).
	red presence

	// alarms are the conditions (Part 9), the demo's limit alarms among them (alarms.go).
	alarms *alarms.Registry

	stopTrust func()
	// pipe dispatches every request through the service table (conn.go).
	pipe      *pipeline.Pipeline[*conn]
	closeOnce sync.Once

	dummyOnce sync.Once
	dummy     string // set once by dummyOnce
}

// New opens the PKI at cfg.Security.PKIDir (creating the application instance
// certificate on first start), builds the address space with live ServerStatus values,
// the subscription engine, the request pipeline and the secure channel server. cfg must
// have passed config.Validate.
func New(cfg *config.Config, opts Options) (_ *Server, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	sec, err := channelSecurity(cfg)
	if err != nil {
		return nil, err
	}
	// Provisioned before the PKI is touched: a configuration this build cannot serve
	// fails at once.
	var kinds routing.Kinds
	for _, k := range opts.Kinds {
		if err := kinds.Register(k); err != nil {
			return nil, err
		}
	}
	for _, k := range hosting.Kinds(log, now) {
		if !kinds.Has(k.Type) {
			_ = kinds.Register(k) // cannot fail: a new type
		}
	}
	configured, err := kinds.Provision(cfg.AddressSpace.NodeManagers)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if rerr := routing.Release(configured); rerr != nil {
				log.Warn("node managers", "err", rerr)
			}
		}
	}()
	// Polling makes a certificate moved between the store folders count within seconds,
	// without a restart; an idle poll only lists the folders.
	p, err := pki.Open(cfg.Security.PKIDir, pki.Options{Logger: log, AutoAccept: cfg.Security.AutoAcceptUntrusted, PollInterval: trustPollInterval})
	if err != nil {
		return nil, fmt.Errorf("open PKI: %w", err)
	}
	defer func() {
		if err != nil {
			_ = p.Close()
		}
	}()
	cert, key, err := p.EnsureOwn(cfg.Application.ApplicationURI, cfg.Endpoint.Hostnames,
		pki.OwnOptions{ApplicationName: cfg.Application.ApplicationName})
	if err != nil {
		return nil, fmt.Errorf("application certificate: %w", err)
	}
	lo := cfg.Security
	s := &Server{
		cfg:          cfg,
		log:          log,
		now:          now,
		pki:          p,
		cert:         cert,
		key:          key,
		endpoints:    buildEndpoints(cfg, sec, cert.Raw),
		tokens:       userTokenPolicies(cfg),
		sessions:     session.NewLimited(sessionLimits(cfg.Limits), now),
		failedLogins: session.NewLockout(lo.MaxFailedAuthenticationAttempts, lo.FailedAuthenticationWindow, lo.FailedAuthenticationLockout, now),
		startTime:    codec.DateTimeOf(now()),
		events:       &events{now: now},
		realClock:    opts.Now == nil,
	}
	s.tel, err = telemetry.New(telemetry.Config{Instance: cfg.Application.ApplicationURI,
		OTLPEndpoint: cfg.Observability.OTLP.Endpoint, OTLPInterval: cfg.Observability.OTLP.Interval, Log: log})
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	defer func() {
		if err != nil {
			_ = s.tel.Shutdown(context.Background())
		}
	}()
	// A panic is one failed request (issue 18 item 6): every part that runs handlers,
	// filters, the engine or node managers recovers and reports here.
	s.sessions.SetPanics(s.tel.Panics())
	if err := s.buildAddressSpace(append(configured, routing.Unnamed(opts.Managers...)...)); err != nil {
		return nil, err
	}
	s.buildSubscriptions()
	if err := s.buildHistory(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.closeHistory()
		}
	}()
	if err := s.buildAdmission(); err != nil {
		return nil, err
	}
	table := s.services()
	var served func(uasc.Request)
	if cfg.Observability.ServiceLatency {
		if s.latency, err = timedServices(table, s.tel.Latency()); err != nil {
			return nil, err
		}
		served = s.served
	}
	s.pipe, err = pipeline.New(pipeline.Config{
		Now:      now,
		Log:      log,
		Sessions: s.sessions,
		Queue:    s.newQueue(),
		Answered: s.diag.Answered,
		Served:   served,
		// The inline Read hands its request back unchanged, so a poll that repeats it
		// is not decoded again.
		Repeat:    true,
		Admission: s.admission,
		Panics:    s.tel.Panics(),
	}, table)
	if err != nil {
		return nil, err
	}
	if err := s.diag.Instrument(s.tel.Meter()); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if err := s.instrument(s.tel.Meter()); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if err := s.instrumentHistory(s.tel.Meter()); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	s.retained = reassemblyBudget(cfg)
	s.observeAdmission()
	if err := s.diag.Install(s.space); err != nil {
		return nil, err
	}
	if err := s.initAlarms(); err != nil {
		return nil, err
	}
	if err := s.initCapabilities(); err != nil {
		return nil, err
	}
	s.initRedundancy()
	if err := s.startMirror(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && s.mirror != nil {
			s.mirror.Close()
		}
	}()
	validate := func(chain []*x509.Certificate) error {
		err := p.ValidateChain(chain, pki.ValidateOptions{Usage: pki.UsageClient})
		if err != nil {
			// The message names the certificate and, for an untrusted one, the file to
			// move to trust it: the integrator's next step.
			log.Warn("client certificate rejected", "err", err)
			s.diag.SecurityRejected()
		}
		return err
	}
	s.channels, err = uasc.NewServer(uasc.ServerConfig{
		Certificate:         cert.Raw,
		Key:                 key,
		Security:            sec,
		ValidateCertificate: validate,
		MinTokenLifetime:    cfg.Limits.MinTokenLifetime,
		MaxTokenLifetime:    cfg.Limits.MaxTokenLifetime,
		Decode: codec.Limits{
			MaxStringLength:     cfg.Encoding.MaxStringLength,
			MaxByteStringLength: cfg.Encoding.MaxByteStringLength,
			MaxArrayLength:      cfg.Encoding.MaxArrayLength,
			MaxDecodeMultiple:   cfg.Encoding.MaxDecodeMultiple,
		},
		UACP:            uacpConfig(cfg),
		MaxChannelCount: cfg.Limits.MaxChannelCount,
		Admit:           s.admitConnection,
		Refused:         s.refused,
		Handshakes:      handshakeGate{s},
		Panicked: func(v any, stack []byte) {
			s.tel.Panics().Report(telemetry.PlaceChannel, v, stack)
		},
		Now: opts.Now, // nil: the channels may use a chunk's read time as the time
		// transport deadlines and the reassembly budget
		Budget:                s.retained,
		MaxRetainedPerChannel: retainedPerChannel(cfg),
		OpenTimeout:           cfg.Limits.HandshakeTimeout,
		AssemblyTimeout:       noBound(cfg.Limits.AssemblyTimeout),
		Expired:               s.transportExpired,
		Overdrawn:             s.reassemblyRefused,
	}, connHandler{s})
	if err != nil {
		return nil, fmt.Errorf("secure channel server: %w", err)
	}
	// Last, so that nothing after it can fail with managers running.
	startCtx, cancel := context.WithTimeout(context.Background(), managerTimeout)
	defer cancel()
	if err := s.routes.Start(startCtx, log, now, s.events); err != nil {
		return nil, err
	}
	s.stopTrust = p.OnTrustChange(func() {
		if n := s.channels.Revalidate(validate); n > 0 {
			log.Info("trust list changed; closed channels", "count", n)
		}
	})
	return s, nil
}

// refused logs and counts a connection the accept loop turned away before reading it
// (limits.maxChannelCount, or the admission: its refusals are logged by
// admissionRejected).
func (s *Server) refused(r uasc.Refusal) {
	s.diag.ConnectionRefused()
	if r.MaxChannelCount > 0 {
		s.tel.Admission().ConnectionRefused(telemetry.RefusedChannelLimit)
		s.log.Warn("connection refused: limits.maxChannelCount reached", "remote", r.Remote.String(), "max", r.MaxChannelCount, "answered", !r.Unanswered)
	}
}

// managerTimeout bounds how long the server waits for the node managers to start, and to
// close when it stops.
const managerTimeout = 30 * time.Second

// closeManagers closes the node managers, within managerTimeout.
func (s *Server) closeManagers() {
	ctx, cancel := context.WithTimeout(context.Background(), managerTimeout)
	defer cancel()
	if err := s.routes.Close(ctx); err != nil {
		s.log.Warn("node managers", "err", err)
	}
}

// buildAddressSpace builds namespace 0, the demo namespace when it is on, the models of
// addressSpace.nodesets and of the managers, the routes to managers and the values of
// the Server object.
func (s *Server) buildAddressSpace(managers []routing.Named) error {
	uris := []string{addrspace.NamespaceURI0}
	if s.cfg.AddressSpace.DemoNamespace {
		uris = append(uris, demo.URI)
	}
	// The models of addressSpace.nodesets and of the managers that ship one
	// (nodemgr.Modeler) take the namespaces after the demo's.
	ms := make([]nodemgr.Manager, len(managers))
	for i := range managers {
		ms[i] = managers[i].Manager
	}
	models, err := nodesets.Load(uris, s.cfg.AddressSpace.Nodesets, ms)
	if err != nil {
		return err
	}
	s.space = addrspace.New(models.Namespaces()...)
	s.space.SetPanics(s.tel.Panics())
	if s.cfg.AddressSpace.DemoNamespace {
		d, err := demo.New(s.space, s.cfg.AddressSpace, s.events, s.now)
		if err != nil {
			return err
		}
		s.demo = d
	}
	if n := models.Len(); n > 0 {
		s.log.Info("models loaded", "nodes", n, "namespaces", models.Namespaces()[len(uris):])
	}
	if err := models.Install(s.space); err != nil {
		return err
	}
	routes, err := routing.New(s.space, managers)
	if err != nil {
		return err
	}
	s.routes = routes
	routes.SetPanics(s.tel.Panics())
	return s.initServerObject()
}

// buildSubscriptions builds the subscription engine from the configuration, has the
// address space push its writes to it, the event types looked up in the address space,
// and the diagnostics and the engine follow the session table.
func (s *Server) buildSubscriptions() {
	l, c := s.cfg.Limits, s.cfg.Subscriptions
	s.subs = subscription.New(subscription.Limits{
		MaxSubscriptions:                 l.MaxSubscriptionCount,
		MaxSubscriptionsPerSession:       c.MaxSubscriptionsPerSession,
		MaxPublishRequests:               l.MaxPublishRequestCount,
		MaxMonitoredItems:                l.MaxMonitoredItemCount,
		MaxMonitoredItemsPerSubscription: l.MaxMonitoredItemsPerSubscription,
		MinPublishingInterval:            c.MinPublishingInterval,
		MaxPublishingInterval:            c.MaxPublishingInterval,
		MaxKeepAliveCount:                uint32(c.MaxKeepAliveCount),
		MaxLifetimeCount:                 uint32(c.MaxLifetimeCount),
		MaxNotificationsPerPublish:       uint32(c.MaxNotificationsPerPublish),
		MinSamplingInterval:              c.MinSamplingInterval,
		MaxSamplingInterval:              c.MaxSamplingInterval,
		MaxQueueSize:                     uint32(c.MaxQueueSize),
		RetransmissionQueueSize:          c.RetransmissionQueueSize,
		MaxSubscriptionsPerOwner:         owner.Share(l.MaxSubscriptionCount, l.OwnerShareInForce()),
		MaxMonitoredItemsPerOwner:        owner.Share(l.MaxMonitoredItemCount, l.OwnerShareInForce()),
		OrphanLifetime:                   c.OrphanLifetime,
	}, s.now, sampler{s})
	s.subs.SetPanics(s.tel.Panics())
	s.space.OnChange(s.subs.Changed)
	s.eventTypes = addrspace.NewEventTypes(s.space)
	s.subs.SetEventTypes(s.eventTypes)
	s.events.subs, s.events.types = s.subs, s.eventTypes
	s.eventTypes.Warm(codec.NewNumericNodeId(0, id.EventQueueOverflowEventType))
	s.eventTypes.Warm(codec.NewNumericNodeId(0, id.SystemEventType))
	if s.demo != nil {
		s.eventTypes.Warm(demo.EventTypeID)
	}
	// The diagnostics observe the sessions first, so that a session's end is counted
	// before its subscriptions go.
	s.diag = diagnostics.New(s.cfg.Observability.DiagnosticsEnabled, s.now, s.subs)
	s.subs.Observe(s.routes.SubscriptionChanged)
	s.sessions.Observe(s.diag.SessionChanged)
	s.sessions.Observe(func(c *session.Change) {
		switch {
		case c.Kind == session.Activated && c.Session != nil:
			// What the session creates counts in its owner's shares.
			s.subs.SetSessionOwner(c.Record.SessionID, c.Session.Owner())
		case c.Kind == session.Ended && c.End == session.Moved:
			s.subs.Forget(c.Record.SessionID)
		case c.Kind == session.Ended:
			s.subs.SessionEnded(c.Record.SessionID, c.DeleteSubscriptions)
			s.events.system("Session closed: " + c.Record.SessionID.String())
		}
	})
}

// sessionLimits are the session table's bounds of l: the table, one owner's share of it
// (none under SharedOnly) and the time a session may stay unactivated.
func sessionLimits(l config.Limits) session.Limits {
	return session.Limits{MaxSessions: l.MaxSessionCount, MaxPerOwner: owner.Share(l.MaxSessionCount, l.OwnerShareInForce()),
		UnactivatedTimeout: l.UnactivatedSessionTimeout}
}

// Endpoints returns the server's EndpointDescriptions. The caller must not modify them.
func (s *Server) Endpoints() []ua.EndpointDescription { return s.endpoints }

// PKIDir returns the folder of the certificate stores.
func (s *Server) PKIDir() string { return s.pki.Root() }

// Certificate returns the application instance certificate.
func (s *Server) Certificate() *x509.Certificate { return s.cert }

// Serve accepts connections on ln until ctx ends, then closes ln, waits for the channels
// and for the request workers to drain the queue and returns nil. Another failure of ln
// is returned. While it runs, the demo namespace's simulated values change (when it is on)
// and the ServiceLevel follows the load. A server of a redundant set (SetRedundancy)
// first drains for at most redundancy.drainTimeout once ctx ends, serving on meanwhile.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	serveCtx, release := s.drainBeforeStop(ctx)
	defer release()
	simCtx, stopSim := context.WithCancel(serveCtx)
	simDone := make(chan struct{})
	levelDone := make(chan struct{})
	go s.subs.Run(simCtx)
	go func() {
		defer close(levelDone)
		s.runServiceLevel(simCtx)
	}()
	go func() {
		defer close(simDone)
		// The demo namespace is an in-process node manager: should its simulation
		// panic, its values stop changing and the server serves on.
		defer s.tel.Panics().Recover(telemetry.PlaceNodeManager)
		if s.demo != nil {
			s.demo.Run(simCtx)
		}
	}()
	// Unregistered as soon as ctx ends, so that a draining server is not discovered.
	registered := s.startRegistration(ctx)
	err := s.channels.Serve(serveCtx, ln)
	stopSim()
	<-simDone
	<-levelDone
	<-registered
	s.pipe.Close()
	s.closeManagers()
	s.sessions.Stop()
	if ctx.Err() != nil && (err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled)) {
		return nil
	}
	return err
}

// Close releases the PKI and pushes the metrics a last time when OTLP is configured.
// Call it after Serve has returned. It is safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closeManagers()
		if s.alarms != nil {
			s.alarms.Close()
		}
		s.sessions.Stop()
		s.closeHistory()
		if s.mirror != nil {
			s.mirror.Close()
		}
		s.stopTrust()
		err = s.pki.Close()
		ctx, cancel := context.WithTimeout(context.Background(), telemetryTimeout)
		defer cancel()
		if terr := s.tel.Shutdown(ctx); terr != nil {
			s.log.Warn("telemetry", "err", terr)
		}
	})
	return err
}

// telemetryTimeout bounds the last OTLP push when the server closes.
const telemetryTimeout = 5 * time.Second
