package uasc

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// noneChannel is the receive half of a None channel with id 5 and token 1.
func noneChannel(budget *Budget, maxSize, maxChunks uint32, maxRetained int) *channel {
	send, recv, _ := policy.None.DeriveKeys(policy.Server, policy.Nonce{}, nil)
	tok := newToken(1, send, recv, time.Now(), time.Hour)
	c := &channel{pol: policy.None, mode: ua.MessageSecurityModeNone, channelID: 5, now: time.Now,
		recvToks: []*token{tok}, sendTok: tok}
	c.asm = assembler{budget: budget, maxSize: maxSize, maxChunks: maxChunks, maxRetained: maxRetained}
	c.setSymmetricSizes(tok)
	return c
}

// noneChunk builds an unsecured MSG chunk.
func noneChunk(chunkType byte, seq, requestID uint32, body []byte) []byte {
	b := make([]byte, symBodyOffset+len(body))
	putHeader(b, uacp.TypeMessage, chunkType, len(b), 5)
	binary.LittleEndian.PutUint32(b[12:], 1)
	putSeqHeader(b, symHeaderLen, seq, requestID)
	copy(b[symBodyOffset:], body)
	return b
}

// FuzzReassemble splits a message into chunks at fuzz-chosen points, optionally damages
// one chunk, and feeds them to the receive path of a None channel: every outcome is either
// the original message or an error with a status code, and the reassembly budget is
// always returned. With mode bit 0x80 the input is fed as a raw chunk stream instead.
// maxRetained is the channel's share of the budget (0: none).
func FuzzReassemble(f *testing.F) {
	f.Add([]byte("hello, world"), []byte{3, 4}, uint32(0), uint8(0), byte(0), uint16(0))
	f.Add(bytes.Repeat([]byte("abcdefgh"), 64), []byte{100, 100, 100, 1}, uint32(300), uint8(3), byte(0), uint16(0))
	f.Add([]byte("xyz"), []byte{1, 1}, uint32(0), uint8(0), byte(0x41), uint16(0))
	f.Add(noneChunk('F', 1, 1, []byte("raw")), []byte{}, uint32(0), uint8(0), byte(0x80), uint16(0))
	// The share: held to exactly, passed by one byte, and a single chunk beyond it (which
	// is decoded in place, never retained).
	f.Add(bytes.Repeat([]byte("abcdefgh"), 64), []byte{200, 200, 100}, uint32(0), uint8(0), byte(0), uint16(512))
	f.Add(bytes.Repeat([]byte("abcdefgh"), 64), []byte{200, 200, 100}, uint32(0), uint8(0), byte(0), uint16(511))
	f.Add(bytes.Repeat([]byte("abcdefgh"), 64), []byte{}, uint32(0), uint8(0), byte(0), uint16(10))
	f.Fuzz(func(t *testing.T, body, cuts []byte, maxSize uint32, maxChunks uint8, mode byte, maxRetained uint16) {
		const budgetBytes = 1 << 16
		budget := NewBudget(budgetBytes)
		c := noneChannel(budget, maxSize, uint32(maxChunks), int(maxRetained))
		var reported []Overdraft
		c.asm.overdrawn = func(o Overdraft) { reported = append(reported, o) }
		var chunks [][]byte
		if mode&0x80 != 0 {
			for b := body; len(b) >= uacp.HeaderSize; {
				h, _ := uacp.ParseHeader(b)
				n := int(h.Size)
				if n < uacp.HeaderSize || n > len(b) {
					n = len(b)
				}
				chunks = append(chunks, b[:n])
				b = b[n:]
			}
		} else {
			rest, seq := body, uint32(1)
			for i := 0; ; i++ {
				n := len(rest)
				if i < len(cuts) && int(cuts[i]) < n {
					n = int(cuts[i])
				}
				ct := byte(uacp.ChunkIntermediate)
				if n == len(rest) {
					ct = uacp.ChunkFinal
				}
				chunks = append(chunks, noneChunk(ct, seq, 9, rest[:n]))
				seq++
				rest = rest[n:]
				if ct == uacp.ChunkFinal {
					break
				}
			}
			if mode != 0 {
				k := chunks[int(mode)%len(chunks)]
				k[int(mode>>2)%len(k)] ^= mode | 1
			}
		}
		var got []byte
		var failed error
		for _, ch := range chunks {
			if len(ch) < uacp.HeaderSize+4 {
				break
			}
			h, _ := uacp.ParseHeader(ch)
			if int(h.Size) != len(ch) || h.Type != uacp.TypeMessage {
				break // uacp.ReadChunk frames and filters these
			}
			reqID, b, _, err := c.openSym(ch, c.now())
			if err == nil {
				var done, aborted bool
				var msg []byte
				msg, done, aborted, err = c.asm.add(h.ChunkType, reqID, b)
				if done {
					got = append([]byte{}, msg...)
					c.asm.reset()
				}
				_ = aborted
			}
			if held, channels := budget.Held(); held > 0 {
				require.EqualValues(t, 1, channels, "the one channel holds %d bytes", held)
			} else {
				require.Zero(t, channels)
			}
			if err != nil {
				var code status.Code
				require.ErrorAs(t, err, &code)
				require.True(t, code.IsBad())
				failed = err
				break
			}
		}
		c.asm.reset()
		require.Equal(t, int64(budgetBytes), budget.Available(), "budget returned")
		held, channels := budget.Held()
		require.Zero(t, held)
		require.Zero(t, channels, "no channel counted as holding once it gave all back")
		// A refusal for the share or the budget is reported once, with the error that
		// ends the channel.
		require.LessOrEqual(t, len(reported), 1)
		if len(reported) == 1 {
			require.Error(t, failed)
			if reported[0] == OverBudget {
				require.ErrorIs(t, failed, status.BadTcpNotEnoughResources)
			}
		}
		if mode == 0 && got != nil {
			require.Equal(t, body, got)
		}
		if mode == 0 && got == nil {
			// Only the limits may stop an undamaged message.
			tooMany := maxChunks != 0 && len(chunks) > int(maxChunks)
			tooBig := maxSize != 0 && len(body) > int(maxSize)
			overBudget := len(chunks) > 1 && len(body) > budgetBytes
			overShare := len(chunks) > 1 && maxRetained != 0 && len(body) > int(maxRetained)
			require.True(t, tooMany || tooBig || overBudget || overShare, "message of %d bytes in %d chunks lost", len(body), len(chunks))
			if len(reported) == 1 {
				require.True(t, reported[0] == OverShare && overShare || reported[0] == OverBudget && overBudget,
					"%v reported for a message of %d bytes in %d chunks", reported[0], len(body), len(chunks))
			}
		}
	})
}
