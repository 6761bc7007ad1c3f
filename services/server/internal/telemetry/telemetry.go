// Package telemetry is what the server tells its operators beyond the OPC UA diagnostics
// nodes: its metrics, kept with the OpenTelemetry SDK, served on /metrics in the
// Prometheus text format and pushed over OTLP when an endpoint is configured, and log
// lines that name an owner, limited per owner so that a flood cannot flood the log.
//
// The instruments of admission control and isolation (Admission), the answer time of
// each service (Latency) and the panics recovered (Panics) are kept in atomics and read when metrics are collected: a
// hot path pays a few uncontended atomic adds, never the SDK's aggregation. The package
// depends on nothing else of the server's, so any package of it may count into it.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// ScopeName is the instrumentation scope of every instrument of the server.
const ScopeName = "uastack.dev/services/server"

// OTLPPath is the path an OTLP endpoint given without one is sent to (the OTLP/HTTP
// default for metrics).
const OTLPPath = "/v1/metrics"

// Config configures the telemetry of a server.
type Config struct {
	// Instance names the server in the exported resource (service.instance.id): its
	// ApplicationUri.
	Instance string
	// OTLPEndpoint is the http:// or https:// URL metrics are pushed to over OTLP/HTTP;
	// empty pushes nothing. A URL without a path is sent to OTLPPath. Headers, timeout and
	// TLS files come from the standard OTEL_EXPORTER_OTLP_* variables.
	OTLPEndpoint string
	// OTLPInterval is the time between two pushes.
	OTLPInterval time.Duration
	// Log receives the OTLP push failures, at most one line a minute, and the panics
	// recovered (Panics); nil discards them.
	Log *slog.Logger
}

// Telemetry is the metrics of one server: an OpenTelemetry MeterProvider whose readers
// are a Prometheus registry of its own (no global state: two servers in one process keep
// their metrics apart) and, when configured, an OTLP/HTTP push. Its methods are safe for
// concurrent use.
type Telemetry struct {
	provider  *sdkmetric.MeterProvider
	registry  *prometheus.Registry
	meter     metric.Meter
	admission *Admission
	latency   *Latency
	panics    *Panics
	handler   http.Handler
}

// New returns the telemetry of a server with the Go runtime's instruments, Admission's,
// Latency's and Panics' registered. Shutdown releases it.
func New(cfg Config) (*Telemetry, error) {
	t := &Telemetry{registry: prometheus.NewRegistry(), latency: newLatency(time.Now())}
	// Without scope labels: every instrument is the server's, so otel_scope_name would
	// say the same on every series and change the label set of every existing one.
	prom, err := promexporter.New(promexporter.WithRegisterer(t.registry), promexporter.WithoutScopeInfo(),
		promexporter.WithProducer(t.latency))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	res, err := newResource(cfg.Instance)
	if err != nil {
		return nil, err
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(prom)}
	if cfg.OTLPEndpoint != "" {
		exp, err := newOTLP(cfg)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp,
			sdkmetric.WithInterval(cfg.OTLPInterval), sdkmetric.WithProducer(t.latency))))
	}
	t.provider = sdkmetric.NewMeterProvider(opts...)
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t.panics = newPanics(log)
	t.meter = guardedMeter{Meter: t.provider.Meter(ScopeName), panics: t.panics}
	t.handler = promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
	if err := instrumentRuntime(t.meter); err != nil {
		return nil, errors.Join(err, t.provider.Shutdown(context.Background()))
	}
	if t.admission, err = newAdmission(t.meter); err != nil {
		return nil, errors.Join(err, t.provider.Shutdown(context.Background()))
	}
	if err := t.panics.instrument(t.meter); err != nil {
		return nil, errors.Join(err, t.provider.Shutdown(context.Background()))
	}
	return t, nil
}

// newResource describes the server to the readers: service.name uastack-server and
// service.instance.id instance over the SDK's defaults, and OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME over both.
func newResource(instance string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", "uastack-server")}
	if instance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", instance))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	env, err := resource.New(context.Background(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	if res, err = resource.Merge(res, env); err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	return res, nil
}

// newOTLP returns the OTLP/HTTP exporter of cfg, whose failures are logged rather than
// handed to OpenTelemetry's global error handler.
func newOTLP(cfg Config) (sdkmetric.Exporter, error) {
	u, err := url.Parse(cfg.OTLPEndpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL", cfg.OTLPEndpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = OTLPPath
	}
	exp, err := otlpmetrichttp.New(context.Background(), otlpmetrichttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &loggedExporter{Exporter: exp, endpoint: u.Redacted(),
		log: NewLogLimiter(log, LogLimit{Lines: 1, Interval: time.Minute})}, nil
}

// loggedExporter logs the failed pushes of an exporter: the periodic reader would hand
// them to OpenTelemetry's process-wide error handler, which writes to the standard log.
type loggedExporter struct {
	sdkmetric.Exporter
	endpoint string
	log      *LogLimiter
}

// Export pushes rm and logs a failure; the next push carries the cumulative values again.
func (e *loggedExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := e.Exporter.Export(ctx, rm); err != nil {
		e.log.Log(ctx, slog.LevelWarn, e.endpoint, "OTLP metrics push failed", "err", err)
	}
	return nil
}

// Meter returns the meter the server's own instruments are made with. The callbacks
// registered on it recover from a panic (PlaceMetrics).
func (t *Telemetry) Meter() metric.Meter { return t.meter }

// Admission returns the instruments of admission control and isolation.
func (t *Telemetry) Admission() *Admission { return t.admission }

// Panics returns the count and the log of the panics the server recovered from.
func (t *Telemetry) Panics() *Panics { return t.panics }

// Latency returns the answer-time histograms of the services.
func (t *Telemetry) Latency() *Latency { return t.latency }

// Handler returns the /metrics handler: the Prometheus text format (or what the scraper
// negotiates), collected when asked.
func (t *Telemetry) Handler() http.Handler { return t.handler }

// WriteText collects the metrics and writes them to w in the Prometheus text format
// (version 0.0.4), as /metrics answers a plain GET.
func (t *Telemetry) WriteText(w io.Writer) error {
	families, err := t.registry.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown pushes the metrics a last time when OTLP is configured and stops the readers;
// ctx bounds the push.
func (t *Telemetry) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// instrumentRuntime registers the Go runtime's goroutines, heap and GC cycles, read once
// per collection.
func instrumentRuntime(m metric.Meter) error {
	goroutines, err := m.Int64ObservableGauge("uastack.go.goroutines", metric.WithDescription("Goroutines."))
	if err != nil {
		return err
	}
	heap, err := m.Int64ObservableGauge("uastack.go.heap", metric.WithUnit("By"),
		metric.WithDescription("Bytes of allocated heap objects."))
	if err != nil {
		return err
	}
	cycles, err := m.Int64ObservableCounter("uastack.go.gc.cycles", metric.WithDescription("Completed GC cycles."))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		o.ObserveInt64(goroutines, int64(runtime.NumGoroutine()))
		o.ObserveInt64(heap, int64(ms.HeapAlloc))
		o.ObserveInt64(cycles, int64(ms.NumGC))
		return nil
	}, goroutines, heap, cycles)
	return err
}
