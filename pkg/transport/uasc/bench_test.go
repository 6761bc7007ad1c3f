package uasc

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// rawBody is a service message whose body is given bytes; it encodes without allocating.
type rawBody struct{ b []byte }

var rawBodyType = &codec.TypeInfo{Name: "rawBody", BinaryEncoding: codec.NewNumericNodeId(1, 4242)}

func (r *rawBody) EncodeBinary(e *codec.Encoder)   { e.Raw(r.b) }
func (r *rawBody) DecodeBinary(d *codec.Decoder)   {}
func (r *rawBody) EncodeJSON(e *codec.JSONEncoder) {}
func (r *rawBody) DecodeJSON(d *codec.JSONDecoder) {}
func (r *rawBody) TypeInfo() *codec.TypeInfo       { return rawBodyType }

// connPair returns the two ends of a UACP connection over loopback TCP.
func connPair(tb testing.TB) (client, server *uacp.Conn) {
	tb.Helper()
	return connPairWrapped(tb, nil)
}

// connPairWrapped is connPair with the server's net.Conn passed through wrap, if not nil.
func connPairWrapped(tb testing.TB, wrap func(net.Conn) net.Conn) (client, server *uacp.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		if wrap != nil {
			nc = wrap(nc)
		}
		server, _ = uacp.Accept(context.Background(), nc, uacp.ServerConfig{})
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(tb, err)
	client, err = uacp.Dial(context.Background(), nc, uacp.ClientConfig{EndpointURL: "opc.tcp://bench"})
	require.NoError(tb, err)
	<-done
	require.NotNil(tb, server)
	tb.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// keyedPair returns a client and a server channel of one Basic256Sha256 SignAndEncrypt
// channel with token 1, over conn (either may be nil).
func keyedPair(tb testing.TB, cconn, sconn *uacp.Conn) (cl, sv *channel) {
	tb.Helper()
	p := policy.Basic256Sha256
	cn, err := p.NewNonce(rand.Reader)
	require.NoError(tb, err)
	sn, err := p.NewNonce(rand.Reader)
	require.NoError(tb, err)
	cs, cr, err := p.DeriveKeys(policy.Client, cn, sn.Value)
	require.NoError(tb, err)
	ss, sr, err := p.DeriveKeys(policy.Server, sn, cn.Value)
	require.NoError(tb, err)
	mk := func(conn *uacp.Conn, send, recv policy.Symmetric, role policy.Role) *channel {
		tok := newToken(1, send, recv, time.Now(), time.Hour)
		neg := uacp.Negotiated{SendBufferSize: 1 << 16, ReceiveBufferSize: 1 << 16}
		if conn != nil {
			neg = conn.Negotiated()
		}
		c := &channel{conn: conn, neg: neg, pool: uacp.DefaultPool, role: role, pol: p,
			mode: ua.MessageSecurityModeSignAndEncrypt, channelID: 3, sendTok: tok, recvToks: []*token{tok}, now: time.Now}
		c.asm = assembler{budget: NewBudget(1 << 30)}
		c.setSymmetricSizes(tok)
		return c
	}
	return mk(cconn, cs, cr, policy.Client), mk(sconn, ss, sr, policy.Server)
}

var benchSizes = []struct {
	name string
	n    int
}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}}

// BenchmarkSendPath measures sendMessage end to end: encode into the chunk buffer, pad,
// sign, encrypt, write to a loopback socket (drained by the peer).
func BenchmarkSendPath(b *testing.B) {
	ids(b)
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			cconn, sconn := connPair(b)
			cl, _ := keyedPair(b, cconn, nil)
			go func() {
				for {
					ch, err := sconn.ReadChunk()
					if err != nil {
						return
					}
					ch.Release()
				}
			}()
			msg := &rawBody{b: make([]byte, sz.n)}
			b.SetBytes(int64(sz.n))
			b.ReportAllocs()
			for b.Loop() {
				if err := cl.sendMessage(uacp.TypeMessage, 1, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// sealedChunks returns the chunks sendMessage would send for a body of n bytes.
func sealedChunks(tb testing.TB, cl *channel, n int) [][]byte {
	tb.Helper()
	body := make([]byte, n)
	maxBody := cl.maxSymBody(int(cl.neg.SendBufferSize))
	var out [][]byte
	for off := 0; off < n || off == 0; off += maxBody {
		part := body[off:min(off+maxBody, n)]
		buf := make([]byte, cl.neg.SendBufferSize)
		copy(buf[symBodyOffset:], part)
		ct := uacp.ChunkIntermediate
		if off+maxBody >= n {
			ct = uacp.ChunkFinal
		}
		sz, err := cl.sealSym(buf, uacp.TypeMessage, ct, 1, len(part))
		require.NoError(tb, err)
		out = append(out, buf[:sz])
		if n == 0 {
			break
		}
	}
	return out
}

// BenchmarkReceivePath measures the receive path per message: decrypt and verify each
// chunk in place, strip padding, check the sequence number, reassemble. The copy of the
// sealed chunk into the receive buffer stands for the socket read.
func BenchmarkReceivePath(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			cl, sv := keyedPair(b, nil, nil)
			chunks := sealedChunks(b, cl, sz.n)
			first := uint32(1) // cl's first sequence number
			work := make([]byte, 1<<16)
			b.SetBytes(int64(sz.n))
			b.ReportAllocs()
			for b.Loop() {
				sv.recvSeq, sv.recvSeqSet = first-1, true
				for _, ch := range chunks {
					w := work[:len(ch)]
					copy(w, ch)
					reqID, body, _, err := sv.openSym(w, sv.now())
					if err != nil {
						b.Fatal(err)
					}
					if _, done, _, err := sv.asm.add(w[3], reqID, body); err != nil {
						b.Fatal(err)
					} else if done {
						sv.asm.reset()
					}
				}
			}
		})
	}
}

// BenchmarkSymmetricChunk64KiB compares sealing and opening one full 64 KiB chunk with the
// raw AES-256-CBC + HMAC-SHA256 cost of the same bytes, measured in the same run, and
// reports the ratio (raw time / our time; 1 means no overhead).
func BenchmarkSymmetricChunk64KiB(b *testing.B) {
	cl, sv := keyedPair(b, nil, nil)
	maxBody := cl.maxSymBody(int(cl.neg.SendBufferSize))
	buf := make([]byte, 1<<16)
	total, _, _ := cl.symChunkLen(maxBody)

	key := make([]byte, 32)
	iv := make([]byte, 16)
	block, _ := aes.NewCipher(key)
	mac := hmac.New(sha256.New, key)
	raw := make([]byte, total)
	var sum [32]byte
	type ivSetter interface {
		cipher.BlockMode
		SetIV([]byte)
	}
	enc := cipher.NewCBCEncrypter(block, iv).(ivSetter)
	dec := cipher.NewCBCDecrypter(block, iv).(ivSetter)
	rawOnce := func() {
		mac.Reset()
		mac.Write(raw[:total-32])
		mac.Sum(sum[:0])
		enc.SetIV(iv)
		enc.CryptBlocks(raw[symHeaderLen:], raw[symHeaderLen:])
		dec.SetIV(iv)
		dec.CryptBlocks(raw[symHeaderLen:], raw[symHeaderLen:])
		mac.Reset()
		mac.Write(raw[:total-32])
		mac.Sum(sum[:0])
	}
	oursOnce := func() {
		n, err := cl.sealSym(buf, uacp.TypeMessage, uacp.ChunkFinal, 1, maxBody)
		if err != nil {
			b.Fatal(err)
		}
		sv.recvSeq = cl.sendSeq - 1
		if _, _, _, err := sv.openSym(buf[:n], sv.now()); err != nil {
			b.Fatal(err)
		}
	}
	sv.recvSeqSet = true
	const rounds = 20
	var rawT, ourT time.Duration
	b.ReportAllocs()
	for b.Loop() {
		// Interleave to share whatever the machine does meanwhile.
		t0 := time.Now()
		for range rounds {
			rawOnce()
		}
		t1 := time.Now()
		for range rounds {
			oursOnce()
		}
		rawT += t1.Sub(t0)
		ourT += time.Since(t1)
	}
	b.ReportMetric(float64(rawT)/float64(ourT), "raw/ours")
	b.ReportMetric(float64(ourT.Nanoseconds())/float64(b.N*rounds), "ns/chunk")
	b.ReportMetric(float64(maxBody)*float64(b.N*rounds)/ourT.Seconds()/1e6, "MB/s-body")
}

// clientOPN builds a client's OpenSecureChannel Issue chunk for the server's certificate.
func clientOPN(tb testing.TB, p policy.Policy) []byte {
	tb.Helper()
	nonce, err := p.NewNonce(rand.Reader)
	require.NoError(tb, err)
	return clientOPNWith(tb, p, &ua.OpenSecureChannelRequest{RequestType: ua.SecurityTokenRequestTypeIssue,
		SecurityMode: ua.MessageSecurityModeSignAndEncrypt, ClientNonce: nonce.Value, RequestedLifetime: 600000})
}

// clientOPNWith builds a client's OPN chunk carrying req.
func clientOPNWith(tb testing.TB, p policy.Policy, req *ua.OpenSecureChannelRequest) []byte {
	tb.Helper()
	cc := &channel{pol: p, mode: ua.MessageSecurityModeSignAndEncrypt, localCert: clientID.der,
		remoteCert: serverID.cert, neg: uacp.Negotiated{SendBufferSize: 1 << 16}}
	var err error
	cc.asym, err = p.NewAsymmetric(clientID.key, serverID.cert)
	require.NoError(tb, err)
	e := codec.NewEncoder(nil)
	e.Message(req)
	b, err := cc.sealAsym(1, e.Bytes())
	require.NoError(tb, err)
	return b
}

// BenchmarkOpenSecureChannel measures the server's CPU per Basic256Sha256 handshake, from
// the client's OPN chunk to the response written, and compares it with the RSA
// operations that handshake needs (decrypting the request's blocks, verifying the client's
// signature, signing the response, encrypting its blocks) measured in the same run. It
// reports raw/ours (1 means no overhead beyond RSA).
func BenchmarkOpenSecureChannel(b *testing.B) {
	ids(b)
	p := policy.Basic256Sha256
	srv, err := NewServer(ServerConfig{Certificate: serverID.der, Key: serverID.key,
		Security:            []SecurityConfig{{PolicyURI: p.Info().URI, Mode: ua.MessageSecurityModeSignAndEncrypt}},
		ValidateCertificate: func([]*x509.Certificate) error { return nil }}, HandlerFunc(echoHandler))
	require.NoError(b, err)
	cconn, sconn := connPair(b)
	go func() {
		for {
			ch, err := cconn.ReadChunk()
			if err != nil {
				return
			}
			ch.Release()
		}
	}()
	const k = 16
	reqs := make([][]byte, k)
	for i := range reqs {
		reqs[i] = clientOPN(b, p)
	}
	_, hdrLen, err := parseAsymmetricHeader(reqs[0])
	require.NoError(b, err)
	// The response is about as long as the request, so the same block count serves both.
	reqBlocks := (len(reqs[0]) - hdrLen) / serverID.key.Size()
	work := make([]byte, 1<<16)

	// The RSA operations of one handshake, on the same key sizes and block counts.
	ptBlock := make([]byte, 256-2*sha1.Size-2)
	ct, _ := rsa.EncryptOAEP(sha1.New(), rand.Reader, &serverID.key.PublicKey, ptBlock, nil)
	digest := sha256.Sum256(reqs[0])
	clientSig, _ := rsa.SignPKCS1v15(rand.Reader, clientID.key, crypto.SHA256, digest[:])
	rsaOnce := func() {
		for range reqBlocks {
			if _, err := serverID.key.Decrypt(rand.Reader, ct, &rsa.OAEPOptions{Hash: crypto.SHA1}); err != nil {
				b.Fatal(err)
			}
		}
		if err := rsa.VerifyPKCS1v15(&clientID.key.PublicKey, crypto.SHA256, digest[:], clientSig); err != nil {
			b.Fatal(err)
		}
		if _, err := rsa.SignPKCS1v15(rand.Reader, serverID.key, crypto.SHA256, digest[:]); err != nil {
			b.Fatal(err)
		}
		for range reqBlocks {
			if _, err := rsa.EncryptOAEP(sha1.New(), rand.Reader, &clientID.key.PublicKey, ptBlock, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	i := 0
	oursOnce := func() {
		sc := &ServerChannel{srv: srv}
		sc.conn, sc.neg, sc.role, sc.now, sc.pool = sconn, sconn.Negotiated(), policy.Server, time.Now, uacp.DefaultPool
		sc.asm = assembler{budget: srv.cfg.Budget}
		r := reqs[i%k]
		i++
		w := work[:len(r)]
		copy(w, r)
		h, _ := uacp.ParseHeader(w)
		ch := uacp.Chunk{Header: h, Bytes: w}
		if err := sc.open(context.Background(), &ch); err != nil {
			b.Fatal(err)
		}
		srv.cfg.IDs.Free(sc.channelID)
	}
	var rawT, ourT time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		rsaOnce()
		t1 := time.Now()
		oursOnce()
		rawT += t1.Sub(t0)
		ourT += time.Since(t1)
	}
	b.ReportMetric(float64(rawT)/float64(ourT), "raw/ours")
	b.ReportMetric(float64(reqBlocks), "blocks")
}
