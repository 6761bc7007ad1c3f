package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// scrape GETs url and parses the Prometheus text format it answers.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// sample returns the value of the sample of family name whose labels are labels
// (name=value pairs), failing when there is none.
func sample(t *testing.T, families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := families[name]
	require.NotNil(t, f, "family %s", name)
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		want := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			want[labels[i]] = labels[i+1]
		}
		if len(got) != len(want) {
			continue
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no sample %s%v", name, labels)
	return 0
}

// TestMetricsServed: /metrics answers the Prometheus text format with the admission
// instruments under the .NET stack's names, every label combination at 0 from the
// start; the values move as the instruments are used; the latency histogram appears
// with its first answer, with its buckets; no series carries scope labels.
func TestMetricsServed(t *testing.T) {
	t.Parallel()
	tel, err := New(Config{Instance: "urn:test:server"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	srv := httptest.NewServer(tel.Handler())
	t.Cleanup(srv.Close)

	f := scrape(t, srv.URL)
	for _, s := range []Stage{StageConnection, StageSession, StageRequest, StageParked, StageRetained} {
		for _, r := range []Reason{ReasonCapacity, ReasonOwnerLimit, ReasonOwnerTableFull, ReasonInvalidOwner} {
			require.Zero(t, sample(t, f, "opcua_server_isolation_rejections_total", "stage", s.String(), "reason", r.String()))
		}
	}
	require.Equal(t, dto.MetricType_COUNTER, f["opcua_server_isolation_rejections_total"].GetType())
	require.Zero(t, sample(t, f, "opcua_server_connections_accepted_total"))
	require.Zero(t, sample(t, f, "opcua_server_connections_refused_total", "reason", "rate"))
	require.Zero(t, sample(t, f, "opcua_server_deadline_expiries_total", "stage", "hello"))
	require.Nil(t, f["opcua_server_isolation_usage"], "no stage observed yet")
	require.Nil(t, f["opcua_server_service_duration_seconds"], "no answer yet")
	require.Positive(t, sample(t, f, "uastack_go_goroutines"))
	require.Positive(t, sample(t, f, "uastack_go_heap_bytes"))
	require.NotNil(t, f["target_info"])

	a := tel.Admission()
	a.Rejected(StageSession, ReasonOwnerLimit)
	a.Rejected(StageSession, ReasonOwnerLimit)
	a.Rejected(StageRetained, ReasonCapacity)
	a.ConnectionAccepted()
	a.ConnectionRefused(RefusedSourceLimit)
	a.DeadlineExpired(DeadlineAssembly)
	var used sync.Mutex // the observed values change under the callback's feet
	usage := StageUsage{Used: 12, Owners: 3}
	a.ObserveStage(StageRequest, func() StageUsage { used.Lock(); defer used.Unlock(); return usage })
	read := tel.Latency().Service("Read")
	read.Record(1, 3*time.Microsecond)
	read.Record(2, 30*time.Microsecond)
	read.Record(3, time.Minute)

	f = scrape(t, srv.URL)
	require.EqualValues(t, 2, sample(t, f, "opcua_server_isolation_rejections_total", "stage", "session", "reason", "OwnerLimit"))
	require.EqualValues(t, 1, sample(t, f, "opcua_server_isolation_rejections_total", "stage", "retained", "reason", "Capacity"))
	require.Zero(t, sample(t, f, "opcua_server_isolation_rejections_total", "stage", "session", "reason", "Capacity"))
	require.EqualValues(t, 1, sample(t, f, "opcua_server_connections_accepted_total"))
	require.EqualValues(t, 1, sample(t, f, "opcua_server_connections_refused_total", "reason", "source_limit"))
	require.EqualValues(t, 1, sample(t, f, "opcua_server_deadline_expiries_total", "stage", "assembly"))
	require.EqualValues(t, 12, sample(t, f, "opcua_server_isolation_usage", "stage", "request"))
	require.EqualValues(t, 3, sample(t, f, "opcua_server_isolation_owners", "stage", "request"))
	require.Len(t, f["opcua_server_isolation_usage"].GetMetric(), 1, "only the observed stage")

	h := f["opcua_server_service_duration_seconds"]
	require.NotNil(t, h)
	require.Equal(t, dto.MetricType_HISTOGRAM, h.GetType())
	require.EqualValues(t, 3, sample(t, f, "opcua_server_service_duration_seconds", "service", "Read"))
	hist := h.GetMetric()[0].GetHistogram()
	require.InDelta(t, 60.000033, hist.GetSampleSum(), 1e-9)
	cumulative := map[float64]uint64{}
	for _, b := range hist.GetBucket() {
		cumulative[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	require.EqualValues(t, 1, cumulative[5e-6], "3 µs")
	require.EqualValues(t, 1, cumulative[2.5e-5])
	require.EqualValues(t, 2, cumulative[5e-5], "30 µs")
	require.EqualValues(t, 2, cumulative[10], "a minute is above every bound")

	for name, fam := range f {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				require.False(t, strings.HasPrefix(l.GetName(), "otel_scope"), "%s has %s", name, l.GetName())
			}
		}
	}

	usage = StageUsage{Used: 5, Owners: 1}
	a.ObserveStage(StageRequest, func() StageUsage { return usage })
	f = scrape(t, srv.URL)
	require.EqualValues(t, 5, sample(t, f, "opcua_server_isolation_usage", "stage", "request"))
	a.ObserveStage(StageRequest, nil)
	f = scrape(t, srv.URL)
	require.Nil(t, f["opcua_server_isolation_usage"], "observation stopped")

	var buf bytes.Buffer
	require.NoError(t, tel.WriteText(&buf))
	require.Contains(t, buf.String(), "# TYPE opcua_server_isolation_rejections_total counter\n")
	require.Contains(t, buf.String(), `opcua_server_isolation_rejections_total{reason="OwnerLimit",stage="session"} 2`+"\n")
}

// TestAdmissionNil: a component built without telemetry counts into a nil Admission and
// a nil ServiceLatency, which do nothing.
func TestAdmissionNil(t *testing.T) {
	t.Parallel()
	var a *Admission
	a.Rejected(StageSession, ReasonCapacity)
	a.ConnectionAccepted()
	a.ConnectionRefused(RefusedRate)
	a.DeadlineExpired(DeadlineWrite)
	a.ObserveStage(StageParked, func() StageUsage { return StageUsage{} })
	require.Zero(t, a.Rejections(StageSession, ReasonCapacity))
	require.Zero(t, a.Accepted())
	var s *ServiceLatency
	s.Record(1, time.Millisecond)

	b := &Admission{}
	b.Rejected(stageCount, ReasonCapacity)
	b.Rejected(StageSession, reasonCount)
	b.ConnectionRefused(refusalCount)
	b.DeadlineExpired(deadlineCount)
	require.Equal(t, "unknown", stageCount.String())
	b.Rejected(StageParked, ReasonInvalidOwner)
	require.EqualValues(t, 1, b.Rejections(StageParked, ReasonInvalidOwner))
}

// otlpReceiver is an OTLP/HTTP metrics receiver on 127.0.0.1: it decodes every export
// request and keeps the names of the metrics with their data points.
type otlpReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex // guards paths, points
	// paths are the paths requested, points the data points of each metric name.
	paths  []string
	points map[string][]*metricspb.Metric
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{points: map[string][]*metricspb.Metric{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body := io.Reader(req.Body)
		if req.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = gz
		}
		b, err := io.ReadAll(body)
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var msg colmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.paths = append(r.paths, req.URL.Path)
		for _, rm := range msg.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					r.points[m.GetName()] = append(r.points[m.GetName()], m)
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// metric returns the last export of the metric name, or nil.
func (r *otlpReceiver) metric(name string) *metricspb.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := r.points[name]
	if len(ms) == 0 {
		return nil
	}
	return ms[len(ms)-1]
}

// TestOTLPExport: with an endpoint configured, the metrics are pushed over OTLP/HTTP
// to /v1/metrics: periodically, and once more on Shutdown, with the rejections as a
// cumulative monotonic sum and the service latency as a histogram in seconds.
func TestOTLPExport(t *testing.T) {
	t.Parallel()
	recv := newOTLPReceiver(t)
	tel, err := New(Config{Instance: "urn:test:otlp", OTLPEndpoint: recv.srv.URL, OTLPInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	tel.Admission().Rejected(StageConnection, ReasonOwnerTableFull)
	tel.Latency().Service("Browse").Record(7, 2*time.Millisecond)

	require.Eventually(t, func() bool { return recv.metric("opcua.server.isolation.rejections") != nil },
		5*time.Second, 10*time.Millisecond, "a periodic push")
	tel.Admission().Rejected(StageConnection, ReasonOwnerTableFull)
	require.NoError(t, tel.Shutdown(context.Background()), "the last push")

	m := recv.metric("opcua.server.isolation.rejections")
	sum := m.GetSum()
	require.NotNil(t, sum)
	require.True(t, sum.GetIsMonotonic())
	require.Equal(t, metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, sum.GetAggregationTemporality())
	var got int64 = -1
	for _, p := range sum.GetDataPoints() {
		attrs := map[string]string{}
		for _, kv := range p.GetAttributes() {
			attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		if attrs["stage"] == "connection" && attrs["reason"] == "OwnerTableFull" {
			got = p.GetAsInt()
		}
	}
	require.EqualValues(t, 2, got, "the push on Shutdown carries the last count")

	d := recv.metric(LatencyName)
	require.NotNil(t, d)
	require.Equal(t, "s", d.GetUnit())
	hp := d.GetHistogram().GetDataPoints()
	require.Len(t, hp, 1)
	require.EqualValues(t, 1, hp[0].GetCount())
	require.InDelta(t, 0.002, hp[0].GetSum(), 1e-12)
	require.Equal(t, latencyBounds, hp[0].GetExplicitBounds())

	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, p := range recv.paths {
		require.Equal(t, OTLPPath, p)
	}
}

// TestOTLPEndpointInvalid: an endpoint that is not an http(s) URL is refused.
func TestOTLPEndpointInvalid(t *testing.T) {
	t.Parallel()
	for _, ep := range []string{"127.0.0.1:4318", "grpc://127.0.0.1:4317", "http://"} {
		_, err := New(Config{OTLPEndpoint: ep, OTLPInterval: time.Second})
		require.Error(t, err, ep)
	}
}

// TestLatencyRecordAllocatesNothing: Record, on the path of every answer, allocates
// nothing, and counts each answer once, in the bucket of its time.
func TestLatencyRecordAllocatesNothing(t *testing.T) {
	l := newLatency(time.Now())
	s := l.Service("Read")
	require.Same(t, s, l.Service("Read"), "one histogram per name")
	allocs := testing.AllocsPerRun(1000, func() { s.Record(3, 4*time.Microsecond) })
	require.Zero(t, allocs)
	require.EqualValues(t, 1001, s.Count())
	s.Record(4, -time.Second) // a clock that stepped back counts as 0
	s.Record(5, 5*time.Microsecond)
	var total [bucketCount]uint64
	for i := range s.shards {
		for j := range s.shards[i].buckets {
			total[j] += s.shards[i].buckets[j].Load()
		}
	}
	require.EqualValues(t, 1003, total[0], "≤ 5 µs: the bound is inclusive")
}

// BenchmarkLatencyRecord is the cost Record adds to an answer, with as many goroutines
// as processors, each its own channel.
func BenchmarkLatencyRecord(b *testing.B) {
	s := newLatency(time.Now()).Service("Read")
	var next sync.Mutex
	ch := uint32(0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		next.Lock()
		ch++
		id := ch
		next.Unlock()
		for pb.Next() {
			s.Record(id, 7*time.Microsecond)
		}
	})
}

// BenchmarkLatencyRecordSDK is BenchmarkLatencyRecord's work done by the OpenTelemetry
// SDK's synchronous histogram with the same buckets and a prepared attribute set: the
// peer Latency is measured against.
func BenchmarkLatencyRecordSDK(b *testing.B) {
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() { _ = provider.Shutdown(context.Background()) }()
	h, err := provider.Meter(ScopeName).Float64Histogram(LatencyName, metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(latencyBounds...))
	require.NoError(b, err)
	opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("service", "Read")))}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.Record(ctx, 7e-6, opts...)
		}
	})
}
