package pipeline

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/session"
	"uastack.dev/services/server/internal/telemetry"
)

// testConn is a channel's state in the tests.
type testConn struct {
	pipe Channel[*testConn]
}

// testHandler makes a testConn per channel.
type testHandler struct{ p *Pipeline[*testConn] }

func (h testHandler) Channel(*uasc.ServerChannel) uasc.ChannelHandler {
	c := new(testConn)
	h.p.Open(&c.pipe, c)
	return &c.pipe
}

// rig is a pipeline behind a real secure channel on loopback (None), its session table
// and a client channel.
type rig struct {
	p        *Pipeline[*testConn]
	sessions *session.Table
	ch       *uasc.ClientChannel
	answered atomic.Int32
}

// newRig serves table through a pipeline on a None channel; admit, when set, is the
// pipeline's Admit.
func newRig(t *testing.T, table []Service[*testConn], admit func(uasc.Request, *Service[*testConn]) status.Code) *rig {
	t.Helper()
	return newRigWith(t, table, admit, nil)
}

// newRigWith is newRig with the pipeline's and the queue's panics counted into panics.
func newRigWith(t *testing.T, table []Service[*testConn], admit func(uasc.Request, *Service[*testConn]) status.Code, panics *telemetry.Panics) *rig {
	t.Helper()
	r := &rig{sessions: session.New(10, time.Now)}
	q := NewQueue(4, 1, 2, time.Now)
	q.panics = panics
	p, err := New(Config{Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Sessions: r.sessions, Queue: q,
		Answered: func(req, resp codec.Structure) { r.answered.Add(1) }, Panics: panics}, table)
	require.NoError(t, err)
	p.Admit = admit
	r.p = p
	srv, err := uasc.NewServer(uasc.ServerConfig{Security: []uasc.SecurityConfig{{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone}}},
		testHandler{p})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served; p.Close() })
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	uc, err := uacp.Dial(ctx, nc, uacp.ClientConfig{EndpointURL: "opc.tcp://" + ln.Addr().String()})
	require.NoError(t, err)
	r.ch, err = uasc.Dial(ctx, uc, uasc.ClientConfig{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.ch.Close() })
	return r
}

// session creates and activates a session of user on the rig's channel.
func (r *rig) session(t *testing.T, user string) codec.NodeId {
	rec, code := r.sessions.Create(session.Request{Name: user, Timeout: time.Minute, ChannelID: r.ch.ID()})
	require.Equal(t, status.Good, code)
	_, code = r.sessions.Activate(rec.AuthenticationToken, r.ch.ID(), nodemgr.Principal{UserName: user}, session.Activation{})
	require.Equal(t, status.Good, code)
	return rec.AuthenticationToken
}

// readAsUser answers a Read with the session's user name: a Serve row that needs a
// session.
func readAsUser(r *Request[*testConn], m *ua.ReadRequest) {
	r.Respond(&ua.ReadResponse{ResponseHeader: r.ResponseHeader(status.Good),
		Results: []codec.DataValue{{Value: codec.StringVariant(r.Principal.UserName)}}})
}

// TestTable: a service listed twice, a row without a handler or with both, a worker row
// that does not Answer, and a row whose type is not a request are refused.
func TestTable(t *testing.T) {
	t.Parallel()
	cfg := Config{Now: time.Now, Queue: NewQueue(1, 1, 1, time.Now)}
	answer := func(*Request[int], *ua.BrowseRequest) codec.Structure { return nil }
	serve := func(*Request[int], *ua.BrowseRequest) {}
	for name, table := range map[string][]Service[int]{
		"twice":      {Answers(answer), Serves(serve)},
		"none":       {{Request: &ua.BrowseRequest{}}},
		"both":       {{Request: &ua.BrowseRequest{}, Answer: Answers(answer).Answer, Serve: Serves(serve).Serve}},
		"worker":     {Serves(serve, OnWorker)},
		"no request": {{Request: &ua.BrowseResponse{}, Answer: Answers(answer).Answer}},
	} {
		_, err := New(cfg, table)
		require.Error(t, err, name)
	}
	p, err := New(cfg, []Service[int]{Answers(answer, NeedsSession, OnWorker)})
	require.NoError(t, err)
	row := p.rows[(&ua.BrowseRequest{}).TypeInfo()]
	require.True(t, row.Session && row.Worker, "the flags set the row")
}

// TestHandle: dispatch through the table on a real channel. An unlisted service is
// BadServiceUnsupported; a session row without a session is refused before its handler
// with the session's code, and with one gets who the session is; a worker row runs on a
// worker; Admit refuses before anything else, with its code; every answer is observed.
func TestHandle(t *testing.T) {
	t.Parallel()
	var onWorker atomic.Bool
	var r *rig
	table := []Service[*testConn]{
		Serves(readAsUser, NeedsSession),
		Answers(func(req *Request[*testConn], m *ua.BrowseRequest) codec.Structure {
			_, _, busy := r.p.Queue().Stats()
			onWorker.Store(busy == 1 && req.Principal == nil)
			return &ua.BrowseResponse{ResponseHeader: req.ResponseHeader(status.Good)}
		}, OnWorker),
	}
	var refuse atomic.Bool
	r = newRig(t, table, func(req uasc.Request, svc *Service[*testConn]) status.Code {
		if refuse.Load() {
			return status.BadServerTooBusy
		}
		return status.Good
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	resp, err := r.ch.Request(ctx, &ua.WriteRequest{RequestHeader: ua.RequestHeader{RequestHandle: 1}})
	require.ErrorIs(t, err, status.BadServiceUnsupported)
	require.Equal(t, uint32(1), resp.(*ua.ServiceFault).ResponseHeader.RequestHandle)

	_, err = r.ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{RequestHandle: 2}})
	require.ErrorIs(t, err, status.BadSessionIdInvalid, "no session")

	token := r.session(t, "alice")
	resp, err = r.ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: token, RequestHandle: 3}})
	require.NoError(t, err)
	require.Equal(t, codec.StringVariant("alice"), resp.(*ua.ReadResponse).Results[0].Value)

	resp, err = r.ch.Request(ctx, &ua.BrowseRequest{RequestHeader: ua.RequestHeader{RequestHandle: 4}})
	require.NoError(t, err)
	require.Equal(t, uint32(4), resp.(*ua.BrowseResponse).ResponseHeader.RequestHandle)
	require.True(t, onWorker.Load())

	refuse.Store(true)
	resp, err = r.ch.Request(ctx, &ua.ReadRequest{RequestHeader: ua.RequestHeader{AuthenticationToken: token, RequestHandle: 5}})
	require.ErrorIs(t, err, status.BadServerTooBusy, "refused by Admit")
	require.Equal(t, uint32(5), resp.(*ua.ServiceFault).ResponseHeader.RequestHandle)
	require.Equal(t, int32(5), r.answered.Load(), "every answer observed")
}
