package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/pipeline"
)

// Run listens on cfg.Endpoint.ListenAddress, creates the Server, logs its endpoints and
// PKI, calls ready (if not nil) with the bound address once connections are accepted,
// and serves until ctx ends; then it closes the listener, waits for the channels to end
// and releases the PKI. When the listen address has port 0, the port of
// cfg.Endpoint.EndpointURL is replaced by the bound one (tests). cfg is modified
// accordingly and must not be used concurrently.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger, ready func(net.Addr)) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Endpoint.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if n := cfg.Limits.ListenBacklog; n > 0 {
		if err := setBacklog(ln, n); err != nil {
			log.Warn("limits.listenBacklog not applied", "backlog", n, "err", err)
		}
	}
	if _, port, err := net.SplitHostPort(cfg.Endpoint.ListenAddress); err == nil && port == "0" {
		if u, err := url.Parse(cfg.Endpoint.EndpointURL); err == nil {
			_, bound, _ := net.SplitHostPort(ln.Addr().String())
			u.Host = net.JoinHostPort(u.Hostname(), bound)
			cfg.Endpoint.EndpointURL = u.String()
		}
	}
	srv, err := New(cfg, Options{Logger: log})
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer srv.Close()
	log.Info("PKI", "dir", srv.PKIDir(), "certificate", pki.Thumbprint(srv.Certificate()),
		"subject", srv.Certificate().Subject.String(), "notAfter", srv.Certificate().NotAfter)
	for _, ep := range srv.Endpoints() {
		log.Info("endpoint", "url", ep.EndpointUrl, "securityPolicy", ep.SecurityPolicyUri,
			"securityMode", ua.MessageSecurityModeName(int64(ep.SecurityMode)), "securityLevel", ep.SecurityLevel)
	}
	obsDone := make(chan error, 1)
	stopObservability := func() {}
	if addr := cfg.Observability.MetricsAddr; addr != "" {
		oln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("observability.metricsAddr: %w", err)
		}
		if host, _, _ := net.SplitHostPort(addr); !isLoopback(host) {
			log.Warn("observability.metricsAddr is reachable beyond this machine: it serves the Go profiler too", "address", oln.Addr().String())
		}
		log.Info("metrics and profiler", "metrics", "http://"+oln.Addr().String()+"/metrics", "pprof", "http://"+oln.Addr().String()+"/debug/pprof/")
		octx, stop := context.WithCancel(ctx)
		stopObservability = stop // Serve may end on its own, before ctx
		go func() { obsDone <- srv.serveObservability(octx, oln) }()
	} else {
		obsDone <- nil
	}
	log.Info("listening", "address", ln.Addr().String())
	stopReloads := srv.reloadOnSignal(ctx)
	defer stopReloads()
	if ready != nil {
		ready(ln.Addr())
	}
	err = srv.Serve(ctx, ln)
	stopObservability()
	if oerr := <-obsDone; oerr != nil && err == nil {
		err = fmt.Errorf("observability: %w", oerr)
	}
	log.Info("server stopped")
	return err
}

// reloadOnSignal reloads the plugin node managers on SIGHUP (as replacing their files
// does) until ctx ends or the returned stop is called.
func (s *Server) reloadOnSignal(ctx context.Context) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-hup:
				s.log.Info("SIGHUP: reloading the plugin node managers")
				if err := s.ReloadManagers(ctx); err != nil {
					s.log.Error("reload", "err", err)
				}
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}

// ReloadManagers reloads every node manager that loads from a file (the WASM modules
// and plugin processes): each guest is replaced by one of the file as it is now, the
// sessions and monitored items stay. It returns once the files are read; the guests are
// replaced in the background.
func (s *Server) ReloadManagers(ctx context.Context) error { return s.routes.Reload(ctx) }

// isLoopback reports whether host names only this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// WriteMetrics writes the server's metrics in the Prometheus text format, as /metrics
// answers: the diagnostics summary, the request queue, the node managers, admission and
// isolation, the services' answer times and the Go runtime.
func (s *Server) WriteMetrics(w io.Writer) error { return s.tel.WriteText(w) }

// instrument registers the request queue's and the node managers' instruments on m,
// observed when metrics are collected.
func (s *Server) instrument(m metric.Meter) error {
	const queueHelp = "Requests waiting for a worker."
	queueLength, err := m.Int64ObservableGauge("uastack.request.queue.length", metric.WithDescription(queueHelp))
	if err != nil {
		return err
	}
	byStage, err := m.Int64ObservableGauge("uastack.request.queue.length_by_stage", metric.WithDescription(queueHelp+" By pipeline stage."))
	if err != nil {
		return err
	}
	workers, err := m.Int64ObservableGauge("uastack.request.workers", metric.WithDescription("Request workers started."))
	if err != nil {
		return err
	}
	busy, err := m.Int64ObservableGauge("uastack.request.workers.busy", metric.WithDescription("Request workers running a job."))
	if err != nil {
		return err
	}
	dropped, err := m.Int64ObservableCounter("uastack.node_manager.pushes.dropped",
		metric.WithDescription("Batches of values and events node managers pushed that were dropped because their queue was full."))
	if err != nil {
		return err
	}
	healthy, err := m.Int64ObservableGauge("uastack.node_manager.healthy",
		metric.WithDescription("1 while a node manager reports itself Good, 0 otherwise."))
	if err != nil {
		return err
	}
	calls, err := m.Int64ObservableCounter("uastack.node_manager.calls",
		metric.WithDescription("Calls across the boundary of a plugin node manager (each carries a batch of operations)."))
	if err != nil {
		return err
	}
	operations, err := m.Int64ObservableCounter("uastack.node_manager.operations",
		metric.WithDescription("Operations carried across the boundary of a plugin node manager."))
	if err != nil {
		return err
	}
	outstanding, err := m.Int64ObservableGauge("uastack.node_manager.outstanding",
		metric.WithDescription("Operations queued for or in flight at a plugin node manager (bounded by maxOutstanding)."))
	if err != nil {
		return err
	}
	replaced, err := m.Int64ObservableCounter("uastack.node_manager.guests_replaced",
		metric.WithDescription("Guests (WASM instances, plugin processes) started in place of one that broke or hung."))
	if err != nil {
		return err
	}
	stageSession := metric.WithAttributeSet(attribute.NewSet(attribute.String("stage", "session")))
	stageService := metric.WithAttributeSet(attribute.NewSet(attribute.String("stage", "service")))
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		q := s.pipe.Queue()
		queued, running, busyNow := q.Stats()
		o.ObserveInt64(queueLength, int64(queued))
		o.ObserveInt64(byStage, int64(q.Queued(pipeline.StageSession)), stageSession)
		o.ObserveInt64(byStage, int64(q.Queued(pipeline.StageService)), stageService)
		o.ObserveInt64(workers, int64(running))
		o.ObserveInt64(busy, int64(busyNow))
		o.ObserveInt64(dropped, int64(s.routes.Dropped()))
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		for _, h := range s.routes.Health(ctx) {
			var v int64
			if h.Health.Status.IsGood() {
				v = 1
			}
			o.ObserveInt64(healthy, v, metric.WithAttributes(attribute.String("manager", h.Name)))
		}
		for _, t := range s.routes.Traffic() {
			manager := metric.WithAttributes(attribute.String("manager", t.Name))
			o.ObserveInt64(calls, int64(t.Calls), manager)
			o.ObserveInt64(operations, int64(t.Operations), manager)
			o.ObserveInt64(outstanding, int64(t.Outstanding), manager)
			o.ObserveInt64(replaced, int64(t.Replaced), manager)
		}
		return nil
	}, queueLength, byStage, workers, busy, dropped, healthy, calls, operations, outstanding, replaced)
	return err
}

// serveObservability serves /metrics and the Go profiler (/debug/pprof/) on ln until ctx
// ends. The profiler shows the server's internals to whoever reaches the address, so
// the address belongs on loopback or behind a firewall (Run warns otherwise).
func (s *Server) serveObservability(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.tel.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() { _ = hs.Close() })
	defer stop()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
