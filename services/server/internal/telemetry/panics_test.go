package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// panicInDeferredRecover panics with v inside a function that defers p.Recover(place).
func panicInDeferredRecover(p *Panics, place Place, v any) {
	defer p.Recover(place)
	panicky(v)
}

// panicky is the frame the stack must show.
func panicky(v any) { panic(v) }

// TestPanicsCountedAndLogged: a recovered panic is counted under its place, exported as
// opcua_server_panics_total{place} (every place at 0 from the start), and logged at
// Error with its value and the stack of the frames that panicked; the lines of one place
// are limited, the count is not.
func TestPanicsCountedAndLogged(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	tel, err := New(Config{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	srv := httptest.NewServer(tel.Handler())
	t.Cleanup(srv.Close)

	f := scrape(t, srv.URL)
	for pl := range placeCount {
		require.Zero(t, sample(t, f, "opcua_server_panics_total", "place", pl.String()))
	}
	p := tel.Panics()
	panicInDeferredRecover(p, PlaceFilter, "boom")
	require.EqualValues(t, 1, p.Count(PlaceFilter))
	line := logs.String()
	require.Contains(t, line, "level=ERROR")
	require.Contains(t, line, "place=filter")
	require.Contains(t, line, "panic=boom")
	require.Contains(t, line, "telemetry.panicky", "the stack holds the frame that panicked")

	for range 20 {
		panicInDeferredRecover(p, PlaceFilter, "again")
	}
	p.Report(PlaceEncode, "encoding", []byte("the stack of elsewhere"))
	require.EqualValues(t, 21, p.Count(PlaceFilter))
	require.Equal(t, panicLog.Lines, strings.Count(logs.String(), "place=filter"), "lines of one place are limited")
	require.Contains(t, logs.String(), "the stack of elsewhere", "another place has lines of its own")
	f = scrape(t, srv.URL)
	require.EqualValues(t, 21, sample(t, f, "opcua_server_panics_total", "place", "filter"))
	require.EqualValues(t, 1, sample(t, f, "opcua_server_panics_total", "place", "encode"))
	require.Zero(t, sample(t, f, "opcua_server_panics_total", "place", "handler"))
}

// TestMetricsCallbackPanics: a callback registered on the server's meter that panics
// does not end the collection: the other instruments are still exported, and the panic
// is counted under place metrics.
func TestMetricsCallbackPanics(t *testing.T) {
	t.Parallel()
	tel, err := New(Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	g, err := tel.Meter().Int64ObservableGauge("test.panicking")
	require.NoError(t, err)
	_, err = tel.Meter().RegisterCallback(func(context.Context, metric.Observer) error { panic("in a callback") }, g)
	require.NoError(t, err)
	srv := httptest.NewServer(tel.Handler())
	t.Cleanup(srv.Close)
	f := scrape(t, srv.URL)
	require.Positive(t, sample(t, f, "uastack_go_goroutines"))
	require.EqualValues(t, 1, tel.Panics().Count(PlaceMetrics))
	f = scrape(t, srv.URL)
	require.GreaterOrEqual(t, sample(t, f, "opcua_server_panics_total", "place", "metrics"), 1.0)
	require.EqualValues(t, 2, tel.Panics().Count(PlaceMetrics), "every collection that panics counts")
}

// TestPanicsNil: without telemetry a recovered panic is still recovered, and logged.
func TestPanicsNil(t *testing.T) {
	var p *Panics
	panicInDeferredRecover(p, PlaceWorker, "no telemetry")
	require.Zero(t, p.Count(PlaceWorker))
	require.Equal(t, "unknown", placeCount.String())
}
