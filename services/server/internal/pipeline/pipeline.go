package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/admission"
	"uastack.dev/services/server/internal/session"
	"uastack.dev/services/server/internal/telemetry"
)

// Service is one row of the service table: a service (Part 4 §5) the server answers.
// Exactly one of Answer and Serve is set. C is the server's per-channel state, handed to
// every handler.
type Service[C any] struct {
	// Request is a value of the service's request type; its TypeInfo keys the row.
	Request codec.Structure
	// Worker runs the handler on a worker of the request queue (stage StageSession)
	// instead of inline on the channel's goroutine: for work that costs milliseconds of
	// CPU, as RSA and password hashing do. The handler is an Answer.
	Worker bool
	// Session makes the request need an activated session bound to its channel (Part 4
	// §5.6.3): without one it is answered with a ServiceFault, and the handler gets who
	// the session is in Request.Principal.
	Session bool
	// Answer returns the answer to the request, which the pipeline sends.
	Answer func(r *Request[C]) codec.Structure
	// Serve answers the request itself (Request.Respond), at once or later: a handler
	// that parks the request, hands it to the queue or recycles it.
	Serve func(r *Request[C])
	// header returns the RequestHeader of a request of the row's type.
	header func(m codec.Structure) *ua.RequestHeader
}

// Request is a request as its handler gets it. It lives in the channel's state and is
// reused for the channel's next request: it is valid until the handler returns, and a
// handler that answers later copies what it needs (the uasc.Request, the Principal).
type Request[C any] struct {
	Ctx context.Context
	Req uasc.Request
	// Header is the request's RequestHeader, inside Req.Message.
	Header *ua.RequestHeader
	// Principal is who the session is, for a service that needs one; it points into the
	// channel's state, so a handler that answers later copies it.
	Principal *nodemgr.Principal
	// Conn is the state of the channel the request came on.
	Conn C
	now  time.Time
	p    *Pipeline[C]
	// ch is the pipeline's state of the channel, set once by Open; nil for a Request
	// made by Pipeline.Request.
	ch *Channel[C]
	// answered says the handler answered the request or handed it on (Respond, Send,
	// Enqueue, Handed): a panic after it does not answer it again.
	answered bool
	// queued says the handler runs as a job of StageSession, within its turn, for pd.
	queued bool
	pd     *Pending
}

// Respond sends msg in answer to r.
func (r *Request[C]) Respond(msg codec.Structure) {
	r.answered = true
	r.p.Respond(r.Req, msg)
}

// Send is Respond for an answer the caller counted itself (the inline Read): it is not
// observed, but told to Config.Served.
func (r *Request[C]) Send(msg codec.Structure) {
	r.answered = true
	if err := r.Req.Respond(msg); err != nil {
		r.p.notSent(r.Req, err)
	} else if r.p.served != nil {
		r.p.served(r.Req)
	}
}

// Handed tells the pipeline that the handler handed the request to what answers it
// later (a Publish parked in the subscription engine): should the handler panic after
// it, the pipeline does not answer the request itself.
func (r *Request[C]) Handed() { r.answered = true }

// Away runs fn, which waits on the network rather than on a processor (the redundant
// set's store, when a session moves here), outside the turn of session establishment
// that r's handler holds when it runs on a worker, and with its unit of the session
// establishment stage lent (admission.Ledger.Lend): other clients' CreateSession and
// ActivateSession go on meanwhile. Elsewhere it just runs fn.
func (r *Request[C]) Away(fn func()) {
	if !r.queued {
		fn()
		return
	}
	if r.pd != nil {
		r.pd.lend()
		defer r.pd.unlend()
	}
	r.p.queue.Away(fn)
}

// Fault returns a ServiceFault answering r with code.
func (r *Request[C]) Fault(code status.Code) *ua.ServiceFault { return r.p.Fault(*r.Header, code) }

// ResponseHeader returns the ResponseHeader answering r with result, now.
func (r *Request[C]) ResponseHeader(result status.Code) ua.ResponseHeader {
	return r.p.Header(*r.Header, result)
}

// Now returns the time the request was read (see Answerer.TimeOf): a request answered at
// once takes it for now and saves a clock reading.
func (r *Request[C]) Now() time.Time { return r.now }

// Enqueue hands job to the request queue as a job of stage StageService costing cost
// operations, owned by r's session, or by the channel's trusted owner when it has one.
// Its turn to be queued, and its place among the requests parked in node managers, are
// admitted first (admission.StageParked, admission.StageQueue): a refused request is
// answered with BadServerTooBusy and a RetryAfterMs hint. See Pipeline.enqueue.
func (r *Request[C]) Enqueue(cost int, job func(*Pending)) {
	p := r.p
	r.answered = true
	key, _ := session.TokenKey(r.Header.AuthenticationToken)
	j := Job{Owner: Owner{Channel: r.Req.Channel.ID(), Session: key}, Key: admission.SessionOwner(key), Cost: cost, Stage: StageService}
	var held hold
	if p.ctl != nil {
		if r.ch != nil && p.ctl.HasTrusted() {
			if t, ok := r.ch.admission(p.ctl, r.Req.Channel).trusted(); ok {
				j.Key = t
			}
		}
		l := p.ctl.Ledger(admission.StageParked)
		c, _, ok := l.Acquire(j.Key, admission.Ordinary, 1)
		if !ok {
			p.Respond(r.Req, p.busy(*r.Header, l.RetryAfter()))
			return
		}
		held = hold{l, c}
	}
	p.enqueue(r.Ctx, r.Req, *r.Header, j, held, job)
}

// hold is a charge of an admission ledger that a queued request holds until it is
// answered.
type hold struct {
	ledger *admission.Ledger
	charge admission.Charge
}

// channelAdmission is what the admission knows of a channel, found once on the
// channel's goroutine: who its requests are charged to before they name a session, and
// its trusted owner, if any.
type channelAdmission struct {
	done      bool
	owner     admission.Owner
	isTrusted bool
}

// trusted returns the channel's trusted owner.
func (a *channelAdmission) trusted() (admission.Owner, bool) { return a.owner, a.isTrusted }

// admission returns what the admission knows of the channel sc, finding it on first use.
// Only the channel's goroutine calls it.
func (ch *Channel[C]) admission(ctl *admission.Controller, sc *uasc.ServerChannel) *channelAdmission {
	a := &ch.adm
	if !a.done {
		remote, cert := sc.RemoteAddr(), sc.ClientCertificate()
		a.owner, a.isTrusted = ctl.Trusted(remote, cert)
		if !a.isTrusted {
			a.owner = ctl.ChannelOwner(remote, cert)
		}
		a.done = true
	}
	return a
}

// Channel is the pipeline's part of a channel's state: the memory of the session the
// channel's requests named last, the Request its handlers get, and the row of the last
// request's type. Only the channel's reading goroutine uses it; the zero Channel is
// ready.
type Channel[C any] struct {
	p      *Pipeline[C]
	conn   C
	Memory session.Memory
	req    Request[C]
	// last and lastRow are the TypeInfo and row of the channel's last request: a
	// client that polls repeats its type, and finds its row without the map.
	last    *codec.TypeInfo
	lastRow *Service[C]
	// adm is what the admission knows of the channel (admission).
	adm channelAdmission
}

// Config configures a Pipeline.
type Config struct {
	Now      func() time.Time
	Log      *slog.Logger
	Sessions *session.Table
	Queue    *Queue
	// Answered, when set, is told of every answer sent (but Request.Send's).
	Answered func(req, resp codec.Structure)
	// Served, when set, is told of every request whose answer was handed to its channel,
	// Request.Send's too, after the answer: for the time each service takes. It runs on
	// the answering goroutine, on the inline Read's path, and must cost nanoseconds.
	Served func(req uasc.Request)
	// Repeat says the handlers hand the requests they answer inline back unchanged
	// (uasc.Request.Recycle), so that the channels may hand out a repeated request
	// without decoding it (uasc.Repeater).
	Repeat bool
	// Admission, when set, admits session establishment (admission.StageSession, the
	// password meter) and the requests handed to node managers
	// (admission.StageParked); the Queue applies its admission.StageQueue. Without it
	// only the queue's capacity bounds the work.
	Admission *admission.Controller
	// Panics counts and logs the panics of handlers and jobs the pipeline recovers from
	// (nil: logged only).
	Panics *telemetry.Panics
}

// Pipeline dispatches the requests of a server's channels through its service table.
// It is safe for concurrent use.
type Pipeline[C any] struct {
	Answerer
	sessions    *session.Table
	queue       *Queue
	outstanding Outstanding
	rows        map[*codec.TypeInfo]*Service[C]
	repeat      bool
	ctl         *admission.Controller
	stopping    atomic.Bool
	// Admit, when set before serving, is asked about every request of a known service
	// before anything else is done for it; a status other than Good refuses the request
	// with a ServiceFault of that status.
	Admit func(req uasc.Request, svc *Service[C]) status.Code
}

// New returns a pipeline that answers the services of table, one row per request type.
func New[C any](cfg Config, table []Service[C]) (*Pipeline[C], error) {
	p := &Pipeline[C]{
		Answerer: Answerer{now: cfg.Now, log: cfg.Log, observe: cfg.Answered, served: cfg.Served, panics: cfg.Panics},
		sessions: cfg.Sessions,
		queue:    cfg.Queue,
		rows:     make(map[*codec.TypeInfo]*Service[C], len(table)),
		repeat:   cfg.Repeat,
		ctl:      cfg.Admission,
	}
	table = slices.Clone(table) // the rows are completed below
	for i := range table {
		row := &table[i]
		ti := row.Request.TypeInfo()
		switch {
		case p.rows[ti] != nil:
			return nil, fmt.Errorf("pipeline: service %s listed twice", ti.Name)
		case (row.Answer == nil) == (row.Serve == nil):
			return nil, fmt.Errorf("pipeline: service %s needs one of Answer and Serve", ti.Name)
		case row.Worker && row.Answer == nil:
			return nil, fmt.Errorf("pipeline: service %s runs on a worker and needs Answer", ti.Name)
		}
		if row.header == nil {
			// A row made by hand, not by Answers or Serves.
			if _, ok := row.Request.(ua.Request); !ok {
				return nil, fmt.Errorf("pipeline: %s is not a request", ti.Name)
			}
			row.header = func(m codec.Structure) *ua.RequestHeader { return m.(ua.Request).Header() }
		}
		p.rows[ti] = row
	}
	return p, nil
}

// Open makes ch, the pipeline's part of the state conn of a channel, the channel's
// uasc.ChannelHandler (Channel.Handle).
func (p *Pipeline[C]) Open(ch *Channel[C], conn C) { ch.p, ch.conn, ch.req.ch = p, conn, ch }

var (
	_ uasc.ChannelHandler = (*Channel[int])(nil)
	_ uasc.Repeater       = (*Channel[int])(nil)
)

// RepeatRecycled opts the channel in to repeated requests (uasc.Repeater) when the
// pipeline's handlers hand requests back unchanged (Config.Repeat).
func (ch *Channel[C]) RepeatRecycled() bool { return ch.p.repeat }

// Handle is the request handling of a channel opened with Open, on its reading
// goroutine: it finds the request's row (BadServiceUnsupported for none), asks Admit,
// checks the session and runs the handler, inline or through the queue. A handler that
// panics is one failed request: the panic is reported (telemetry.PlaceHandler) and the
// request, unless the handler answered it already, answered with a ServiceFault
// BadInternalError; the channel reads its next request.
func (ch *Channel[C]) Handle(ctx context.Context, req uasc.Request) {
	p := ch.p
	// What recovered needs is in the channel's Request from the start, so that the
	// deferred call copies nothing: a few nanoseconds, no allocation, on the inline
	// Read's path (server/RATIONALE.md).
	ch.req.Req, ch.req.answered = req, false
	defer ch.recovered()
	ti, row := req.Message.TypeInfo(), ch.lastRow
	if ti != ch.last {
		row = p.rows[ti]
		if row == nil {
			p.Respond(req, p.Fault(ua.RequestHeaderOf(req.Message), status.BadServiceUnsupported))
			return
		}
		ch.last, ch.lastRow = ti, row
	}
	h := row.header(req.Message)
	if p.Admit != nil {
		if code := p.Admit(req, row); code != status.Good {
			p.Respond(req, p.Fault(*h, code))
			return
		}
	}
	// Field by field: a composite literal stored through r would be copied with the
	// write barriers of a bulk move, for every request.
	r := &ch.req
	r.Ctx, r.Header, r.Principal, r.Conn, r.now, r.p = ctx, h, nil, ch.conn, p.TimeOf(req), p
	if row.Session {
		principal, code := p.sessions.PrincipalAt(h.AuthenticationToken, req.Channel.ID(), r.now, &ch.Memory)
		if code != status.Good {
			p.Respond(req, p.Fault(*h, code))
			return
		}
		r.Principal = principal
	}
	switch {
	case row.Worker:
		j := Job{Owner: Owner{Channel: req.Channel.ID()}, Cost: 1, Stage: StageSession}
		var held hold
		if p.ctl != nil {
			var retryAfter time.Duration
			if held, retryAfter = p.admitSession(ch, req, h, &j); held.ledger == nil {
				p.Respond(req, p.busy(*h, retryAfter))
				return
			}
		}
		// The job keeps a copy: the channel's Request is its next request's.
		wr := *r
		wr.queued = true
		p.enqueue(ctx, req, *h, j, held, func(pd *Pending) {
			wr.Ctx, wr.pd = pd.Ctx, pd
			pd.Answer(row.Answer(&wr))
		})
	case row.Answer != nil:
		p.Respond(req, row.Answer(r))
	default:
		row.Serve(r)
	}
}

// recovered is deferred by Handle: it recovers from a panic of the handling of the
// channel's request, reports it and answers the request with BadInternalError unless
// the handler answered it (or handed it on) before it panicked.
func (ch *Channel[C]) recovered() {
	v := recover()
	if v == nil {
		return
	}
	p, req := ch.p, ch.req.Req
	p.panics.Recovered(telemetry.PlaceHandler, v)
	if !ch.req.answered {
		ch.req.answered = true
		p.Respond(req, p.Fault(ua.RequestHeaderOf(req.Message), status.BadInternalError))
	}
}

// admitSession admits a CreateSession or ActivateSession (j) at the session
// establishment stage, on the channel's goroutine and so before any RSA or password
// work: the stage's ledger charges it to the channel's client (admission.ChannelOwner),
// as Reconnect when it activates a session that was activated before; a UserName
// identity token then takes a token of the password meter of the peer's address. It
// sets j's Key and Class and returns the charge to hold until the request is answered,
// or, refused, a hold without ledger and the RetryAfterMs hint.
func (p *Pipeline[C]) admitSession(ch *Channel[C], req uasc.Request, h *ua.RequestHeader, j *Job) (hold, time.Duration) {
	j.Key = ch.admission(p.ctl, req.Channel).owner
	class, password := admission.Ordinary, false
	if m, ok := req.Message.(*ua.ActivateSessionRequest); ok {
		if key, ok := session.TokenKey(h.AuthenticationToken); ok && p.ctl.Reconnecting(key) {
			class = admission.Reconnect
		}
		_, password = m.UserIdentityToken.Value.(*ua.UserNameIdentityToken)
	}
	l := p.ctl.Ledger(admission.StageSession)
	c, _, ok := l.Acquire(j.Key, class, 1)
	if !ok {
		return hold{}, l.RetryAfter()
	}
	if password {
		if wait, ok := p.ctl.MeterPassword(req.Channel.RemoteAddr()); !ok {
			l.Release(c)
			return hold{}, wait
		}
	}
	j.Class = c.Class()
	return hold{l, c}, 0
}

// busy returns the ServiceFault BadServerTooBusy answering h, with the RetryAfterMs
// hint retryAfter spread by up to a quarter at random: clients refused at the same
// moment are told the same drain time, and a client that honours the hint as the least
// wait (the .NET stack's does) would otherwise come back with all the others at once.
func (p *Pipeline[C]) busy(h ua.RequestHeader, retryAfter time.Duration) *ua.ServiceFault {
	retryAfter = min(retryAfter+rand.N(retryAfter/4+1), RetryAfterMax)
	f := p.Fault(h, status.BadServerTooBusy)
	f.ResponseHeader.AdditionalHeader = retryAfterHeader(retryAfter)
	return f
}

// timeoutGrace is how long after a request's TimeoutHint its managers have to answer
// their items BadTimeout before the whole request is answered with a ServiceFault.
const timeoutGrace = 50 * time.Millisecond

// enqueue hands j, whose work is run, to the request queue. When the queue is full the
// request is answered with a ServiceFault BadServerTooBusy carrying a RetryAfterMs hint;
// after Close the answer is BadShutdown. The request holds held until it is answered
// (or its channel ends). run gets the pending request and answers it with
// Pending.Answer; it must not wait on I/O (see Job). A run that panics answers the
// request with BadInternalError (telemetry.PlaceWorker).
func (p *Pipeline[C]) enqueue(ctx context.Context, req uasc.Request, h ua.RequestHeader, j Job, held hold, run func(*Pending)) {
	pd := &Pending{a: &p.Answerer, req: req, h: h}
	if h.TimeoutHint > 0 {
		timeout := time.Duration(h.TimeoutHint) * time.Millisecond
		pd.Ctx, pd.cancel = context.WithTimeout(ctx, timeout)
		// The managers see the deadline and answer their items BadTimeout, so that the
		// response still carries the others' results; only a request nobody answered
		// soon after it is ended with a ServiceFault.
		deadline := pd.Ctx
		pd.stopTime = time.AfterFunc(timeout+timeoutGrace, func() {
			if errors.Is(deadline.Err(), context.DeadlineExceeded) {
				pd.timeout()
			}
		}).Stop
	} else {
		pd.Ctx, pd.cancel = context.WithCancel(ctx)
	}
	// The context ends however the request ends (answered, timed out, channel gone):
	// then it leaves the registry of Cancel and gives its charge back.
	pd.held = held
	if done := p.outstanding.track(pd); done != nil {
		context.AfterFunc(pd.Ctx, done)
	} else if held.ledger != nil {
		context.AfterFunc(pd.Ctx, pd.release)
	}
	j.Run = func() {
		if !pd.Done() {
			defer pd.recovered(telemetry.PlaceWorker)
			run(pd)
		}
	}
	ok, retryAfter := p.queue.Push(j)
	if ok {
		return
	}
	if p.stopping.Load() {
		pd.Answer(p.Fault(h, status.BadShutdown))
		return
	}
	pd.Answer(p.busy(h, retryAfter))
}

// Outstanding returns the registry of the requests Cancel can reach.
func (p *Pipeline[C]) Outstanding() *Outstanding { return &p.outstanding }

// Queue returns the request queue.
func (p *Pipeline[C]) Queue() *Queue { return p.queue }

// Close refuses further queued work (BadShutdown), lets the workers drain the queue and
// waits for them.
func (p *Pipeline[C]) Close() {
	p.stopping.Store(true)
	p.queue.Close()
}

// Flag changes how a row of the service table runs.
type Flag uint8

const (
	// NeedsSession makes a request need an activated session (Service.Session).
	NeedsSession Flag = 1 << iota
	// OnWorker runs the handler on a worker (Service.Worker).
	OnWorker
)

// Message is a request message of type *T, as the generated types are.
type Message[T any] interface {
	codec.Structure
	Header() *ua.RequestHeader
	*T
}

// Answers returns the row of the service whose requests are of type M, answered by f.
func Answers[C any, M Message[T], T any](f func(*Request[C], M) codec.Structure, flags ...Flag) Service[C] {
	s := row[C, M](flags)
	s.Answer = func(r *Request[C]) codec.Structure { return f(r, r.Req.Message.(M)) }
	return s
}

// Serves returns the row of the service whose requests are of type M, served by f, which
// answers them itself.
func Serves[C any, M Message[T], T any](f func(*Request[C], M), flags ...Flag) Service[C] {
	s := row[C, M](flags)
	s.Serve = func(r *Request[C]) { f(r, r.Req.Message.(M)) }
	return s
}

func row[C any, M Message[T], T any](flags []Flag) Service[C] {
	s := Service[C]{Request: M(new(T)), header: func(m codec.Structure) *ua.RequestHeader { return m.(M).Header() }}
	for _, f := range flags {
		s.Session = s.Session || f&NeedsSession != 0
		s.Worker = s.Worker || f&OnWorker != 0
	}
	return s
}

// Request returns the Request of req on a channel whose state is conn, as Handle would
// hand it to a handler but without the table's checks: for a benchmark or test that
// calls a handler directly.
func (p *Pipeline[C]) Request(ctx context.Context, req uasc.Request, conn C) *Request[C] {
	return &Request[C]{Ctx: ctx, Req: req, Header: req.Message.(ua.Request).Header(), Conn: conn, now: p.TimeOf(req), p: p}
}
