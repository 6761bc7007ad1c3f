package uasc

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// TestAsymmetricHeaderWire checks the asymmetric security header against annotated bytes in
// both directions (Part 6 §6.7.2.3).
func TestAsymmetricHeaderWire(t *testing.T) {
	h := asymmetricHeader{SecurityPolicyURI: "urn:p", SenderCertificate: []byte{0xc1, 0xc2}}
	wire := []byte{
		'O', 'P', 'N', 'F', // MessageType, ChunkType
		0x29, 0x00, 0x00, 0x00, // MessageSize 41
		0x07, 0x00, 0x00, 0x00, // SecureChannelId 7
		0x05, 0x00, 0x00, 0x00, 'u', 'r', 'n', ':', 'p', // SecurityPolicyUri
		0x02, 0x00, 0x00, 0x00, 0xc1, 0xc2, // SenderCertificate
		0xff, 0xff, 0xff, 0xff, // ReceiverCertificateThumbprint: null
		0x01, 0x00, 0x00, 0x00, // SequenceNumber 1
		0x02, 0x00, 0x00, 0x00, // RequestId 2
		0xee, 0xee, // body
	}
	b := make([]byte, channelHeaderLen, len(wire))
	putHeader(b, uacp.TypeOpen, uacp.ChunkFinal, len(wire), 7)
	b = appendAsymmetricHeader(b, &h)
	b = b[:len(b)+seqHeaderLen]
	putSeqHeader(b, len(b)-seqHeaderLen, 1, 2)
	b = append(b, 0xee, 0xee)
	require.Equal(t, wire, b)

	got, end, err := parseAsymmetricHeader(wire)
	require.NoError(t, err)
	require.Equal(t, h, got)
	require.Equal(t, 31, end)
	require.Equal(t, h.encodedLen(), end-channelHeaderLen)

	_, _, err = parseAsymmetricHeader(wire[:20])
	require.ErrorIs(t, err, status.BadDecodingError)
}

// TestSymmetricChunkWire checks an unsecured MSG chunk against annotated bytes (Part 6
// §6.7.2.2) and reads it back.
func TestSymmetricChunkWire(t *testing.T) {
	c := noneChannel(nil, 0, 0, 0)
	c.neg.SendBufferSize = 8192
	wire := []byte{
		'M', 'S', 'G', 'C', // MessageType, ChunkType intermediate
		0x1b, 0x00, 0x00, 0x00, // MessageSize 27
		0x05, 0x00, 0x00, 0x00, // SecureChannelId 5
		0x01, 0x00, 0x00, 0x00, // TokenId 1
		0x01, 0x00, 0x00, 0x00, // SequenceNumber 1
		0x09, 0x00, 0x00, 0x00, // RequestId 9
		'a', 'b', 'c', // body
	}
	b := make([]byte, 64)
	copy(b[symBodyOffset:], "abc")
	n, err := c.sealSym(b, uacp.TypeMessage, uacp.ChunkIntermediate, 9, 3)
	require.NoError(t, err)
	require.Equal(t, wire, b[:n])

	reqID, body, tok, err := c.openSym(wire, c.now())
	require.NoError(t, err)
	require.Equal(t, uint32(9), reqID)
	require.Equal(t, []byte("abc"), body)
	require.Equal(t, uint32(1), tok.id)
}

// TestSequenceNumbers covers Part 6 §6.7.2.4: exactly one more, wrap-around only after
// 4 294 966 271 and only to a number below 1024.
func TestSequenceNumbers(t *testing.T) {
	require.Equal(t, uint32(2), nextSeq(1))
	require.Equal(t, uint32(seqWrapAfter), nextSeq(seqWrapAfter-1))
	require.Equal(t, uint32(1), nextSeq(seqWrapAfter))
	for _, tc := range []struct {
		last, got uint32
		ok        bool
	}{
		{1, 2, true},
		{1, 1, false}, // replay
		{5, 4, false}, // regression
		{1, 3, false}, // gap
		{seqWrapAfter - 1, seqWrapAfter, true},
		{seqWrapAfter - 1, 0, false}, // wrap too early
		{seqWrapAfter, seqWrapAfter + 1, true},
		{seqWrapAfter, 1, true},
		{seqWrapAfter, 1023, true},
		{seqWrapAfter, 1024, false},
		{^uint32(0), 0, true},
		{^uint32(0), 5000, false},
	} {
		require.Equal(t, tc.ok, seqFollows(tc.last, tc.got), "%d after %d", tc.got, tc.last)
	}

	// Through the channel: a sender at the wrap point and its receiver.
	cl, sv := keyedPair(t, nil, nil)
	cl.sendSeq = seqWrapAfter - 2
	sv.recvSeq, sv.recvSeqSet = seqWrapAfter-2, true
	for range 4 {
		chunks := sealedChunks(t, cl, 10)
		_, _, _, err := sv.openSym(chunks[0], sv.now())
		require.NoError(t, err)
	}
	require.Equal(t, uint32(2), sv.recvSeq)
	// A replayed chunk after the wrap is refused.
	chunks := sealedChunks(t, cl, 10)
	replay := append([]byte(nil), chunks[0]...)
	_, _, _, err := sv.openSym(chunks[0], sv.now())
	require.NoError(t, err)
	_, _, _, err = sv.openSym(replay, sv.now())
	require.ErrorIs(t, err, status.BadSequenceNumberInvalid)
}

// TestPreviousToken checks that after a renewal the previous token is accepted until it
// expires (its lifetime plus 25%, Part 6 §6.7.6) and refused afterwards.
func TestPreviousToken(t *testing.T) {
	cl, sv := keyedPair(t, nil, nil)
	now := time.Now()
	sv.now = func() time.Time { return now }
	old := newToken(sv.recvToks[0].id, sv.recvToks[0].send, sv.recvToks[0].recv, now, time.Minute)
	sv.recvToks[0] = old
	renewed := newToken(2, old.send, old.recv, now, time.Minute)
	sv.recvToks = append(sv.recvToks, renewed)

	send := func() error {
		chunks := sealedChunks(t, cl, 10)
		_, _, _, err := sv.openSym(chunks[0], sv.now())
		return err
	}
	now = now.Add(74 * time.Second) // past the lifetime, within 25% more
	require.NoError(t, send())
	now = now.Add(2 * time.Second)
	require.ErrorIs(t, send(), status.BadSecureChannelTokenUnknown)
}

// TestCloseEndsServeConn checks that CloseSecureChannel ends ServeConn without error and
// frees the SecureChannelId.
func TestCloseEndsServeConn(t *testing.T) {
	ids(t)
	idsAlloc := NewIDAllocator()
	srv, err := NewServer(ServerConfig{Security: []SecurityConfig{{PolicyURI: policy.URINone, Mode: ua.MessageSecurityModeNone}}, IDs: idsAlloc}, HandlerFunc(echoHandler))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	result := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			result <- err
			return
		}
		c, err := uacp.Accept(context.Background(), nc, uacp.ServerConfig{})
		if err != nil {
			result <- err
			return
		}
		result <- srv.ServeConn(context.Background(), c)
	}()
	cc, err := dialChannel(t, ln.Addr().String(), clientConfig(combo{policy.URINone, ua.MessageSecurityModeNone}))
	require.NoError(t, err)
	read(t, cc, 1, "x")
	id := cc.ID()
	require.NotZero(t, id)
	require.NoError(t, cc.Close())
	select {
	case err := <-result:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("ServeConn still running")
	}
	idsAlloc.mu.Lock()
	_, live := idsAlloc.live[id]
	idsAlloc.mu.Unlock()
	require.False(t, live)
	_, err = cc.Request(context.Background(), readOf("late"))
	require.ErrorIs(t, err, status.BadSecureChannelClosed)
}

// TestIDAllocator checks that live ids are never handed out twice and 0 never.
func TestIDAllocator(t *testing.T) {
	a := &IDAllocator{next: ^uint32(0) - 2, live: map[uint32]struct{}{1: {}}}
	seen := map[uint32]bool{}
	for range 5 {
		id := a.Allocate()
		require.NotZero(t, id)
		require.NotEqual(t, uint32(1), id)
		require.False(t, seen[id])
		seen[id] = true
	}
	_ = binary.LittleEndian
}
