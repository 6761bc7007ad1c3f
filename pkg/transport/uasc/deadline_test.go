package uasc

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	goua "github.com/gopcua/opcua/ua"
	gouacp "github.com/gopcua/opcua/uacp"
	gouasc "github.com/gopcua/opcua/uasc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// The tests of this file act as hostile peers with raw TCP writes and show, each, that a
// legitimate client (gopcua's secure channel) is served while the attack goes on.

// hostile is a raw TCP peer of the test's making.
type hostile struct {
	nc                      net.Conn
	channelID, tokenID, seq uint32
}

// dialHostile connects to addr; with hello it sends a Hello offering chunks of
// bufferSize bytes and reads the Acknowledge.
func dialHostile(t *testing.T, addr string, hello bool, bufferSize uint32) *hostile {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	h := &hostile{nc: nc}
	if hello {
		h.write(t, (&uacp.Hello{ReceiveBufferSize: bufferSize, SendBufferSize: bufferSize, EndpointURL: "opc.tcp://" + addr}).Append(nil))
		b := h.readMessage(t)
		require.Equal(t, "ACK", string(b[:3]), "got %q", b)
	}
	return h
}

// openHostile is dialHostile with a None channel opened by hand.
func openHostile(t *testing.T, addr string, bufferSize uint32) *hostile {
	t.Helper()
	h := dialHostile(t, addr, true, bufferSize)
	h.write(t, clientOPNWith(t, policy.None, &ua.OpenSecureChannelRequest{
		RequestType: ua.SecurityTokenRequestTypeIssue, SecurityMode: ua.MessageSecurityModeNone, RequestedLifetime: 600000}))
	b := h.readMessage(t)
	require.Equal(t, "OPN", string(b[:3]), "got %q", b)
	_, hdrLen, err := parseAsymmetricHeader(b)
	require.NoError(t, err)
	m := codec.NewDecoder(b[hdrLen+seqHeaderLen:]).Message()
	resp, ok := m.(*ua.OpenSecureChannelResponse)
	require.True(t, ok, "got %T", m)
	h.channelID, h.tokenID, h.seq = resp.SecurityToken.ChannelId, resp.SecurityToken.TokenId, 1
	return h
}

func (h *hostile) write(t *testing.T, b []byte) {
	t.Helper()
	_, err := h.nc.Write(b)
	require.NoError(t, err)
}

// msg is an unsecured MSG chunk of the channel, with the next sequence number.
func (h *hostile) msg(chunkType byte, requestID uint32, body []byte) []byte {
	h.seq++
	b := make([]byte, symBodyOffset+len(body))
	putHeader(b, uacp.TypeMessage, chunkType, len(b), h.channelID)
	binary.LittleEndian.PutUint32(b[12:], h.tokenID)
	putSeqHeader(b, symHeaderLen, h.seq, requestID)
	copy(b[symBodyOffset:], body)
	return b
}

// readMessage reads one whole message or chunk, within five seconds.
func (h *hostile) readMessage(t *testing.T) []byte {
	t.Helper()
	require.NoError(t, h.nc.SetReadDeadline(time.Now().Add(5*time.Second)))
	hdr := make([]byte, uacp.HeaderSize)
	_, err := io.ReadFull(h.nc, hdr)
	require.NoError(t, err)
	b := make([]byte, binary.LittleEndian.Uint32(hdr[4:]))
	copy(b, hdr)
	_, err = io.ReadFull(h.nc, b[uacp.HeaderSize:])
	require.NoError(t, err)
	return b
}

// errCode reads until the server's ERR, within wait, and returns its status; it fails
// the test if the server sends anything else or closes without one.
func (h *hostile) errCode(t *testing.T, wait time.Duration) status.Code {
	t.Helper()
	require.NoError(t, h.nc.SetReadDeadline(time.Now().Add(wait)))
	b, err := io.ReadAll(h.nc)
	require.NoError(t, err, "the server closes after its ERR, within %v", wait)
	m, err := uacp.DecodeMessage(b)
	require.NoError(t, err, "got %q", b)
	e, ok := m.(*uacp.Error)
	require.True(t, ok, "got %T", m)
	return e.Code
}

// tally records what ServerConfig.Expired and Overdrawn report.
type tally struct {
	mu        sync.Mutex // guards expired, overdrawn
	expired   map[Deadline]int
	overdrawn map[Overdraft]int
}

// newTally returns a tally that c's Expired and Overdrawn report to.
func newTally(c *ServerConfig) *tally {
	tl := &tally{expired: map[Deadline]int{}, overdrawn: map[Overdraft]int{}}
	c.Expired = func(d Deadline) {
		tl.mu.Lock()
		tl.expired[d]++
		tl.mu.Unlock()
	}
	c.Overdrawn = func(o Overdraft) {
		tl.mu.Lock()
		tl.overdrawn[o]++
		tl.mu.Unlock()
	}
	return tl
}

// require waits up to five seconds for the tally to be exactly expired and overdrawn
// (nil: none): a connection is counted as it ends, after its ERR is on the way.
func (tl *tally) require(t *testing.T, expired map[Deadline]int, overdrawn map[Overdraft]int) {
	t.Helper()
	if expired == nil {
		expired = map[Deadline]int{}
	}
	if overdrawn == nil {
		overdrawn = map[Overdraft]int{}
	}
	same := func() bool {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		return maps.Equal(tl.expired, expired) && maps.Equal(tl.overdrawn, overdrawn)
	}
	if !assert.Eventually(t, same, 5*time.Second, 5*time.Millisecond) {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		t.Fatalf("expired %v, overdrawn %v; want %v, %v", tl.expired, tl.overdrawn, expired, overdrawn)
	}
}

// legit is a legitimate client: gopcua's secure channel with SecurityPolicy None.
type legit struct {
	sc   *gouasc.SecureChannel
	errs chan error
}

// dialLegit opens a gopcua channel to addr offering chunks of bufferSize bytes.
func dialLegit(t *testing.T, addr string, bufferSize uint32) (*legit, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := &gouacp.Dialer{ClientACK: &gouacp.Acknowledge{ReceiveBufSize: bufferSize, SendBufSize: bufferSize}}
	conn, err := d.Dial(ctx, "opc.tcp://"+addr)
	if err != nil {
		return nil, err
	}
	cfg := &gouasc.Config{SecurityPolicyURI: policy.URINone, SecurityMode: goua.MessageSecurityModeNone,
		Lifetime: uint32((10 * time.Minute).Milliseconds()), RequestTimeout: 10 * time.Second}
	l := &legit{errs: make(chan error, 16)}
	l.sc, err = gouasc.NewSecureChannel("opc.tcp://"+addr, conn, cfg, l.errs)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if err := l.sc.Open(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	t.Cleanup(func() { l.sc.Close() })
	return l, nil
}

// read sends a Read whose IndexRange is r (echoed by echoHandler) and checks the answer.
func (l *legit) read(t *testing.T, r string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := &goua.ReadRequest{NodesToRead: []*goua.ReadValueID{{NodeID: goua.NewNumericNodeID(0, 2258), AttributeID: 13,
		IndexRange: r, DataEncoding: &goua.QualifiedName{}}}}
	var got string
	err := l.sc.SendRequest(ctx, req, nil, func(v goua.Response) error {
		resp, ok := v.(*goua.ReadResponse)
		if !ok || len(resp.Results) != 1 {
			return errors.New("not a ReadResponse of one result")
		}
		got, _ = resp.Results[0].Value.Value().(string)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, r, got)
	select {
	case err := <-l.errs:
		t.Fatalf("gopcua reported %v", err)
	default:
	}
}

// TestHandshakeDeadlines fills MaxChannelCount with peers that never open a channel:
// some send nothing, some only a Hello, some a Hello and half an OpenSecureChannel. A
// legitimate client is refused while they hold every slot (BadTcpNotEnoughResources);
// each of them gets an ERR BadTimeout once its deadline passes (HelloTimeout, OpenTimeout),
// and then the legitimate client gets in and is served.
func TestHandshakeDeadlines(t *testing.T) {
	t.Parallel()
	const maxChannels, deadline = 9, 500 * time.Millisecond
	var tl *tally
	ts := startServer(t, func(c *ServerConfig) {
		c.MaxChannelCount = maxChannels
		c.UACP.HelloTimeout = deadline
		c.OpenTimeout = deadline
		tl = newTally(c)
	})
	opn := clientOPNWith(t, policy.None, &ua.OpenSecureChannelRequest{
		RequestType: ua.SecurityTokenRequestTypeIssue, SecurityMode: ua.MessageSecurityModeNone, RequestedLifetime: 600000})
	start := time.Now()
	var peers []*hostile
	for i := range maxChannels {
		switch i % 3 {
		case 0: // silent
			peers = append(peers, dialHostile(t, ts.addr, false, 0))
		case 1: // Hello only
			peers = append(peers, dialHostile(t, ts.addr, true, 8192))
		case 2: // Hello and half an OPN
			h := dialHostile(t, ts.addr, true, 8192)
			h.write(t, opn[:len(opn)/2])
			peers = append(peers, h)
		}
	}
	// Every slot is held (the silent peers' too, once accepted).
	require.Eventually(t, func() bool {
		_, err := dialLegit(t, ts.addr, 1<<16)
		return errors.Is(err, goua.StatusBadTCPNotEnoughResources)
	}, 5*time.Second, 10*time.Millisecond, "refused while the hostile peers hold every slot")

	var wg sync.WaitGroup
	codes := make([]status.Code, len(peers))
	for i, h := range peers {
		wg.Go(func() { codes[i] = h.errCode(t, 5*time.Second) })
	}
	wg.Wait()
	held := time.Since(start)
	for i, code := range codes {
		require.Equal(t, status.BadTimeout, code, "peer %d", i)
	}
	require.GreaterOrEqual(t, held, deadline)
	require.Less(t, held, deadline+3*time.Second)
	// The silent peers passed the Hello's deadline, the others the OPN's (a chunk begun
	// has 30 s of its own).
	tl.require(t, map[Deadline]int{DeadlineHello: maxChannels / 3, DeadlineOpen: 2 * maxChannels / 3}, nil)

	var l *legit
	require.Eventually(t, func() bool {
		var err error
		l, err = dialLegit(t, ts.addr, 1<<16)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	l.read(t, "in at last")
}

// TestTrickledChunk has a peer with an open channel send a chunk one byte a second: with
// a chunk timeout of 2 s the server ends it with an ERR BadTimeout about 2 s after the
// first byte. A legitimate client is served throughout, and stays open though it is idle
// for longer than the chunk timeout.
func TestTrickledChunk(t *testing.T) {
	t.Parallel()
	const chunkTimeout = 2 * time.Second
	var tl *tally
	ts := startServer(t, func(c *ServerConfig) {
		c.UACP.ChunkTimeout = chunkTimeout
		tl = newTally(c)
	})
	l, err := dialLegit(t, ts.addr, 1<<16)
	require.NoError(t, err)
	l.read(t, "before")

	h := openHostile(t, ts.addr, 8192)
	e := codec.NewEncoder(nil)
	e.Message(readOf("never whole"))
	chunk := h.msg(uacp.ChunkFinal, 7, e.Bytes())
	begun := time.Now()
	code := make(chan status.Code, 1)
	go func() {
		for _, b := range chunk {
			if _, err := h.nc.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(time.Second)
		}
	}()
	go func() { code <- h.errCode(t, 10*time.Second) }()

	l.read(t, "during")
	select {
	case c := <-code:
		cut := time.Since(begun)
		require.Equal(t, status.BadTimeout, c)
		require.GreaterOrEqual(t, cut, chunkTimeout)
		require.Less(t, cut, chunkTimeout+time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the trickled chunk was not cut off")
	}
	tl.require(t, map[Deadline]int{DeadlineChunk: 1}, nil)
	l.read(t, "after, idle for longer than the chunk timeout")
	tl.require(t, map[Deadline]int{DeadlineChunk: 1}, nil)
}

// TestSilentPartialMessages has sixteen peers, each on a channel of its own, begin a
// message of several chunks as large as its share of the reassembly budget allows and
// fall silent. The share (a 32nd of the budget) leaves room: a legitimate client's
// request of several chunks is served while they hold theirs. A peer that goes beyond the
// share is cut at once: the server offered no larger MaxMessageSize, so it is
// BadTcpMessageTooLarge. At the assembly deadline the silent peers get an ERR BadTimeout
// and the budget is whole again.
func TestSilentPartialMessages(t *testing.T) {
	t.Parallel()
	const (
		share    = 64 << 10
		total    = 32 * share
		silent   = 16
		assembly = 3 * time.Second
	)
	budget := NewBudget(total)
	var tl *tally
	ts := startServer(t, func(c *ServerConfig) {
		c.Budget, c.MaxRetainedPerChannel, c.AssemblyTimeout = budget, share, assembly
		tl = newTally(c)
	})
	body := make([]byte, 8192-symBodyOffset)
	perChannel := share / len(body) // whole chunks within the share
	peers := make([]*hostile, silent)
	for i := range peers {
		peers[i] = openHostile(t, ts.addr, 8192)
	}
	// The partial messages go out together, so that none meets its deadline before the
	// last is sent.
	for _, h := range peers {
		var chunks []byte
		for range perChannel {
			chunks = append(chunks, h.msg(uacp.ChunkIntermediate, 9, body)...)
		}
		h.write(t, chunks)
	}
	begun := time.Now()
	held := int64(silent * perChannel * len(body))
	require.Eventually(t, func() bool { return budget.Available() == total-held }, 5*time.Second, 5*time.Millisecond)
	bytes, channels := budget.Held()
	require.Equal(t, held, bytes)
	require.EqualValues(t, silent, channels, "each silent peer holds some")
	codes := make(chan status.Code, silent)
	for _, h := range peers {
		go func() { codes <- h.errCode(t, 10*time.Second) }()
	}

	// Beyond its share.
	greedy := openHostile(t, ts.addr, 8192)
	var chunks []byte
	for range perChannel + 1 {
		chunks = append(chunks, greedy.msg(uacp.ChunkIntermediate, 9, body)...)
	}
	greedy.write(t, chunks)
	require.Equal(t, status.BadTcpMessageTooLarge, greedy.errCode(t, 5*time.Second))
	tl.require(t, nil, map[Overdraft]int{OverShare: 1})

	// A legitimate request of five 8 KiB chunks.
	l, err := dialLegit(t, ts.addr, 8192)
	require.NoError(t, err)
	l.read(t, strings.Repeat("L", 40000))
	require.LessOrEqual(t, budget.Available(), total-held, "served while the silent peers held their bytes")

	for range silent {
		select {
		case c := <-codes:
			require.Equal(t, status.BadTimeout, c)
		case <-time.After(10 * time.Second):
			t.Fatal("a silent partial message outlived the assembly deadline")
		}
	}
	require.GreaterOrEqual(t, time.Since(begun), assembly-200*time.Millisecond)
	require.Eventually(t, func() bool { return budget.Available() == total }, 5*time.Second, 5*time.Millisecond)
	l.read(t, strings.Repeat("M", 40000))
	tl.require(t, map[Deadline]int{DeadlineAssembly: silent}, map[Overdraft]int{OverShare: 1})
	bytes, channels = budget.Held()
	require.Zero(t, bytes)
	require.Zero(t, channels)
}

// TestAcknowledgeOffersTheShare checks that Serve offers no MaxMessageSize beyond the
// channel's share of the reassembly budget, and the configured size when it is smaller.
func TestAcknowledgeOffersTheShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		share         int
		maxMessage    uint32
		wantAdvertise uint32
	}{
		{"default share", 0, 0, DefaultMaxRetainedPerChannel},
		{"share below size", 100000, 1 << 20, 100000},
		{"size below share", 1 << 20, 100000, 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, func(c *ServerConfig) {
				c.MaxRetainedPerChannel, c.UACP.Limits.MaxMessageSize = tc.share, tc.maxMessage
			})
			c, _ := dialUACP(t, ts.addr, uacp.Limits{})
			require.Equal(t, tc.wantAdvertise, c.Negotiated().MaxSendMessageSize)
		})
	}
}

// TestShareOnAConnAcceptedElsewhere serves a connection that negotiated a larger message
// size than the share (ServeConn called directly): a message beyond the share ends the
// channel with BadTcpNotEnoughResources, and the budget is returned.
func TestShareOnAConnAcceptedElsewhere(t *testing.T) {
	t.Parallel()
	ids(t)
	budget := NewBudget(1 << 20)
	cfg := ServerConfig{Security: []SecurityConfig{{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone}},
		Budget: budget, MaxRetainedPerChannel: 20000}
	tl := newTally(&cfg)
	srv, err := NewServer(cfg, HandlerFunc(echoHandler))
	require.NoError(t, err)
	cconn, sconn := connPair(t)
	served := make(chan error, 1)
	go func() { served <- srv.ServeConn(context.Background(), sconn) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, err := Dial(ctx, cconn, clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err)
	defer cc.Close()
	read(t, cc, 1, strings.Repeat("s", 15000))
	_, err = cc.Request(ctx, readOf(strings.Repeat("b", 100000)))
	require.Error(t, err)
	requireChannelError(t, cc, status.BadTcpNotEnoughResources)
	require.ErrorIs(t, <-served, status.BadTcpNotEnoughResources)
	require.Equal(t, int64(1<<20), budget.Available())
	tl.require(t, nil, map[Overdraft]int{OverShare: 1})
}

// endings records the error each channel ended with (ChannelEnder).
type endings struct {
	h    HandlerFunc
	errs chan error
}

func (e *endings) Channel(*ServerChannel) ChannelHandler { return &endingHandler{e} }

type endingHandler struct{ e *endings }

func (h *endingHandler) Handle(ctx context.Context, r Request) { h.e.h(ctx, r) }
func (h *endingHandler) ChannelEnded(err error)                { h.e.errs <- err }

// TestPeerThatStopsReading has a peer ask for 64 MiB of responses, answered with Respond
// on the channel's own goroutine, and read none of them. With no bound on the backlog,
// only the write timeout (300 ms) frees the writer: Respond fails with BadTimeout within
// a few periods, the channel ends with that error, and a legitimate client is served
// meanwhile and after.
func TestPeerThatStopsReading(t *testing.T) {
	t.Parallel()
	const writeTimeout = 300 * time.Millisecond
	big := codec.ByteStringVariant(make([]byte, 256<<10))
	respondErr := make(chan error, 1)
	var wrote time.Time
	e := &endings{errs: make(chan error, 16), h: func(ctx context.Context, r Request) {
		m, ok := r.Message.(*ua.ReadRequest)
		if !ok || len(m.NodesToRead) == 0 || m.NodesToRead[0].IndexRange != "flood" {
			echoHandler(ctx, r)
			return
		}
		resp := &ua.ReadResponse{Results: []codec.DataValue{{Value: big}}}
		for range 256 {
			wrote = time.Now()
			if err := r.Respond(resp); err != nil {
				respondErr <- err
				return
			}
		}
		respondErr <- nil
	}}
	var tl *tally
	ts := startServerFor(t, func(c *ServerConfig) {
		c.UACP.WriteTimeout = writeTimeout
		c.MaxSendBacklog = 1 << 30
		tl = newTally(c)
	}, e)
	l, err := dialLegit(t, ts.addr, 1<<16)
	require.NoError(t, err)

	h := openHostile(t, ts.addr, 1<<16)
	require.NoError(t, h.nc.(*net.TCPConn).SetReadBuffer(64<<10))
	enc := codec.NewEncoder(nil)
	enc.Message(readOf("flood"))
	h.write(t, h.msg(uacp.ChunkFinal, 3, enc.Bytes()))

	l.read(t, "during")
	select {
	case err := <-respondErr:
		require.ErrorIs(t, err, status.BadTimeout)
		require.Less(t, time.Since(wrote), 3*writeTimeout+time.Second, "the writer waited at most two periods")
	case <-time.After(15 * time.Second):
		t.Fatal("the writer still waits on the peer")
	}
	var ended error
	require.Eventually(t, func() bool {
		select {
		case ended = <-e.errs:
			return errors.Is(ended, status.BadTimeout)
		default:
			return false
		}
	}, 5*time.Second, 5*time.Millisecond, "the channel ends with the write's timeout")
	tl.require(t, map[Deadline]int{DeadlineWrite: 1}, nil)
	l.read(t, "after")
}
