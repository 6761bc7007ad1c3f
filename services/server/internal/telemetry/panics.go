package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Place is where a goroutine of the server recovered from a panic (issue 18 item 6): the
// label place of opcua_server_panics_total.
type Place uint8

// The places a panic is recovered at.
const (
	// PlaceHandler: a service handler on a channel's reading goroutine.
	PlaceHandler Place = iota
	// PlaceWorker: a job of the request queue, on a worker.
	PlaceWorker
	// PlaceNodeManager: a method of a node manager (Read, Write, Browse, Call, Watch,
	// Health, ...) or a goroutine of an in-process one that the server runs.
	PlaceNodeManager
	// PlaceAddressSpace: a value the address space computes at read time (ServerStatus,
	// the diagnostics) or one of its method handlers.
	PlaceAddressSpace
	// PlaceDone: what a node manager's done callback runs: the gathering of results and
	// the answer.
	PlaceDone
	// PlacePush: the delivery of the values and events a node manager pushed.
	PlacePush
	// PlaceFilter: a data change filter, or an event filter's where and select clauses.
	PlaceFilter
	// PlacePublish: the subscription engine's timer goroutine (publishing cycles,
	// sampling) and its answers to Publish.
	PlacePublish
	// PlaceObserver: an observer of the changes of sessions or subscriptions.
	PlaceObserver
	// PlaceSweeper: the sweep that ends idle and unactivated sessions.
	PlaceSweeper
	// PlaceMetrics: a callback run when metrics are collected.
	PlaceMetrics
	// PlaceRegistration: the registration with the discovery server.
	PlaceRegistration
	// PlaceEncode: the encoding of a response (a value whose encoding panics).
	PlaceEncode
	// PlaceChannel: a connection's own goroutine outside the handlers (its handshakes,
	// the decoding of its requests); the connection is closed.
	PlaceChannel
	placeCount
)

var placeNames = [placeCount]string{"handler", "worker", "node_manager", "address_space", "done",
	"push", "filter", "publish", "observer", "sweeper", "metrics", "registration", "encode", "channel"}

// String returns the place's label value.
func (p Place) String() string {
	if p >= placeCount {
		return "unknown"
	}
	return placeNames[p]
}

// panicLog bounds the log lines of recovered panics: a few per place per minute, so that
// a client that provokes the same panic with every request costs the log little (the
// count says how many there were).
var panicLog = LogLimit{Lines: 5, Interval: time.Minute}

// Panics counts the panics the server's goroutines recover from, by place, and logs each
// with the panic's value and stack at level Error, at most a few lines per place per
// minute (LogLimiter, the place as owner):
//
//	opcua_server_panics_total{place}  panics recovered
//
// A goroutine that recovers answers what it was doing with BadInternalError (a request,
// an item) and goes on serving; Panics only tells. Counting is an atomic add. The
// methods of a nil *Panics log to slog.Default without a limit and count nothing, for
// the packages' tests that run without telemetry. It is safe for concurrent use.
type Panics struct {
	log    *LogLimiter
	counts [placeCount]atomic.Uint64
}

// Recover recovers from a panic and reports it at place: defer it directly
// (defer p.Recover(telemetry.PlaceMetrics)) where nothing is to be answered in the
// panic's stead; recover works only in the deferred call itself.
func (p *Panics) Recover(place Place) {
	if v := recover(); v != nil {
		p.Recovered(place, v)
	}
}

// Recovered reports v, a panic recovered at place; args are added to the log line (a
// node manager's name). Call it from the deferred function that recovered v, before
// that function returns: the line takes the stack then, and it still holds the frames
// that panicked.
func (p *Panics) Recovered(place Place, v any, args ...any) {
	p.report(place, v, slog.Any("stack", stackNow{}), args)
}

// Report reports v, a panic recovered at place whose stack was taken where it was
// recovered (a channel's encoding, uasc.EncodePanic); args are added to the log line.
func (p *Panics) Report(place Place, v any, stack []byte, args ...any) {
	p.report(place, v, slog.String("stack", string(stack)), args)
}

func (p *Panics) report(place Place, v any, stack slog.Attr, args []any) {
	const msg = "panic recovered; serving on"
	args = append(args, "place", place.String(), "panic", fmt.Sprint(v), stack)
	if p == nil {
		slog.Default().Error(msg, args...)
		return
	}
	if place < placeCount {
		p.counts[place].Add(1)
	}
	p.log.Log(context.Background(), slog.LevelError, place.String(), msg, args...)
}

// Count returns the panics recovered at place.
func (p *Panics) Count(place Place) uint64 {
	if p == nil || place >= placeCount {
		return 0
	}
	return p.counts[place].Load()
}

// stackNow is the stack of the goroutine that writes the log line, taken only when the
// line is written (slog resolves a LogValuer as the handler formats the record): a
// suppressed line costs no stack.
type stackNow struct{}

// LogValue returns the current goroutine's stack.
func (stackNow) LogValue() slog.Value { return slog.StringValue(string(debug.Stack())) }

// newPanics returns Panics logging to log.
func newPanics(log *slog.Logger) *Panics { return &Panics{log: NewLogLimiter(log, panicLog)} }

// instrument registers the counter of p on m; every place is exported from the start,
// at 0.
func (p *Panics) instrument(m metric.Meter) error {
	panics, err := m.Int64ObservableCounter("opcua.server.panics",
		metric.WithDescription("Panics the server recovered from, answering the request or item with BadInternalError, by place."))
	if err != nil {
		return err
	}
	var byPlace [placeCount]metric.ObserveOption
	for pl := range placeCount {
		byPlace[pl] = metric.WithAttributeSet(attribute.NewSet(attribute.String("place", pl.String())))
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for pl := range placeCount {
			o.ObserveInt64(panics, int64(p.counts[pl].Load()), byPlace[pl])
		}
		return nil
	}, panics)
	return err
}

// guardedMeter is the server's meter: every callback registered on it recovers from a
// panic (PlaceMetrics), so that a collection, which may run on the SDK's own goroutine
// (an OTLP push), never ends the server, and the other callbacks still report.
type guardedMeter struct {
	metric.Meter
	panics *Panics
}

// RegisterCallback registers f, guarded, for instruments.
func (m guardedMeter) RegisterCallback(f metric.Callback, instruments ...metric.Observable) (metric.Registration, error) {
	p := m.panics
	return m.Meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		defer p.Recover(PlaceMetrics)
		return f(ctx, o)
	}, instruments...)
}
