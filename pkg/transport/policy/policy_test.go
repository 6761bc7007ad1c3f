package policy

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
)

// want is the expected static description of each policy (Part 7).
var want = map[string]struct {
	name                 string
	nonce                int
	minBits, maxBits     int
	keys                 KeyLengths
	symSig               int
	plainOverhead        int // RSA encryption padding per block
	newHash              func() hash.Hash
	encryptingKeyAESBits int
}{
	URIBasic128Rsa15:       {"Basic128Rsa15", 16, 1024, 2048, KeyLengths{16, 16, 16}, 20, 11, sha1.New, 128},
	URIBasic256:            {"Basic256", 32, 1024, 2048, KeyLengths{24, 32, 16}, 20, 42, sha1.New, 256},
	URIBasic256Sha256:      {"Basic256Sha256", 32, 2048, 4096, KeyLengths{32, 32, 16}, 32, 42, sha256.New, 256},
	URIAes128Sha256RsaOaep: {"Aes128_Sha256_RsaOaep", 32, 2048, 4096, KeyLengths{32, 16, 16}, 32, 42, sha256.New, 128},
	URIAes256Sha256RsaPss:  {"Aes256_Sha256_RsaPss", 32, 2048, 4096, KeyLengths{32, 32, 16}, 32, 66, sha256.New, 256},
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	uris := []string{URINone, URIBasic128Rsa15, URIBasic256, URIBasic256Sha256, URIAes128Sha256RsaOaep, URIAes256Sha256RsaPss}
	require.Len(t, All(), len(uris))
	for i, uri := range uris {
		p, ok := Lookup(uri)
		require.True(t, ok, uri)
		require.Equal(t, uri, p.Info().URI)
		require.Equal(t, "http://opcfoundation.org/UA/SecurityPolicy#"+p.Info().Name, uri)
		require.Equal(t, uri, All()[i].Info().URI, "registration order")
	}
	_, ok := Lookup("http://opcfoundation.org/UA/SecurityPolicy#Basic512")
	require.False(t, ok)
	_, ok = Lookup("")
	require.False(t, ok)

	_, err := NewRegistry(None, Basic256Sha256, Basic256Sha256)
	require.ErrorContains(t, err, "registered twice")
	_, err = NewRegistry(None, nil)
	require.Error(t, err)
	r, err := NewRegistry(Basic256Sha256)
	require.NoError(t, err)
	_, ok = r.Lookup(URINone)
	require.False(t, ok, "None is only present when registered explicitly")
}

func TestInfo(t *testing.T) {
	t.Parallel()
	for _, p := range rsaPolicies(t) {
		info := p.Info()
		w, ok := want[info.URI]
		require.True(t, ok, info.URI)
		require.Equal(t, w.name, info.Name)
		require.Equal(t, w.nonce, info.NonceLength)
		require.Equal(t, w.minBits, info.MinAsymmetricKeyBits)
		require.Equal(t, w.maxBits, info.MaxAsymmetricKeyBits)
		require.Equal(t, w.keys, info.Keys)
		require.Equal(t, w.symSig, info.SymmetricSignatureSize)
		require.False(t, info.AEAD)
		require.True(t, info.RSA)
	}
	require.Equal(t, Info{URI: URINone, Name: "None"}, None.Info())
}

func TestAsymmetricSignVerify(t *testing.T) {
	t.Parallel()
	for _, p := range rsaPolicies(t) {
		for _, pair := range keyPairs(t, p) {
			local, remote := pair[0], pair[1]
			name := fmt.Sprintf("%s/%d-%d", p.Info().Name, local.key.N.BitLen(), remote.key.N.BitLen())
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sender, err := p.NewAsymmetric(local.key, remote.cert)
				require.NoError(t, err)
				receiver, err := p.NewAsymmetric(remote.key, local.cert)
				require.NoError(t, err)
				require.Equal(t, local.key.Size(), sender.SignatureSize())
				require.Equal(t, local.key.Size(), receiver.RemoteSignatureSize())

				msg := []byte("OpenSecureChannel chunk to sign")
				prefix := []byte("hdr")
				sig, err := sender.Sign(prefix, msg)
				require.NoError(t, err)
				require.Equal(t, prefix, sig[:3], "Sign appends")
				sig = sig[3:]
				require.Len(t, sig, sender.SignatureSize())
				require.NoError(t, receiver.Verify(msg, sig))

				bad := bytes.Clone(msg)
				bad[0] ^= 1
				require.ErrorIs(t, receiver.Verify(bad, sig), status.BadSecurityChecksFailed)
				badSig := bytes.Clone(sig)
				badSig[len(badSig)/2] ^= 0x80
				require.ErrorIs(t, receiver.Verify(msg, badSig), status.BadSecurityChecksFailed)
				require.ErrorIs(t, receiver.Verify(msg, sig[1:]), status.BadSecurityChecksFailed)
				// The sender cannot verify its own signature with the remote key.
				require.ErrorIs(t, sender.Verify(msg, sig), status.BadSecurityChecksFailed)
			})
		}
	}
}

func TestAsymmetricEncryptDecrypt(t *testing.T) {
	t.Parallel()
	for _, p := range rsaPolicies(t) {
		w := want[p.Info().URI]
		for _, pair := range keyPairs(t, p) {
			local, remote := pair[0], pair[1]
			name := fmt.Sprintf("%s/%d-%d", p.Info().Name, local.key.N.BitLen(), remote.key.N.BitLen())
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sender, err := p.NewAsymmetric(local.key, remote.cert)
				require.NoError(t, err)
				receiver, err := p.NewAsymmetric(remote.key, local.cert)
				require.NoError(t, err)

				pt, ct := sender.PlaintextBlockSize(), sender.CiphertextBlockSize()
				require.Equal(t, remote.key.Size(), ct)
				require.Equal(t, ct-w.plainOverhead, pt)
				require.Equal(t, pt, receiver.LocalPlaintextBlockSize())
				require.Equal(t, ct, receiver.LocalCiphertextBlockSize())
				require.Equal(t, remote.key.N.BitLen() > 2048, ExtraPadding(ct))

				for _, n := range []int{1, pt, 2*pt + pt/2, 3 * pt} {
					plain := make([]byte, n)
					_, _ = rand.Read(plain)
					blocks := (n + pt - 1) / pt
					require.Equal(t, blocks*ct, sender.EncryptedLen(n))

					// In place: the plaintext at the start of a buffer large
					// enough for the cipher text.
					buf := make([]byte, blocks*ct)
					copy(buf, plain)
					m, err := sender.Encrypt(buf, buf[:n])
					require.NoError(t, err)
					require.Equal(t, blocks*ct, m)
					if n >= 16 {
						require.NotEqual(t, plain, buf[:n])
					}

					out := make([]byte, blocks*ct)
					k, err := receiver.Decrypt(out, buf)
					require.NoError(t, err)
					require.Equal(t, plain, out[:k])

					k, err = receiver.Decrypt(buf, buf)
					require.NoError(t, err)
					require.Equal(t, plain, buf[:k])
				}

				buf := make([]byte, 2*ct)
				_, err = sender.Encrypt(buf, make([]byte, pt+1))
				require.NoError(t, err)
				buf[ct+5] ^= 1
				_, err = receiver.Decrypt(buf, buf)
				require.ErrorIs(t, err, status.BadSecurityChecksFailed)
				_, err = receiver.Decrypt(buf, buf[:ct+1])
				require.ErrorIs(t, err, status.BadSecurityChecksFailed)
				_, err = sender.Encrypt(make([]byte, ct), make([]byte, pt+1))
				require.ErrorIs(t, err, status.BadInternalError, "destination too small")
			})
		}
	}
}

func TestAsymmetricKeyLimits(t *testing.T) {
	t.Parallel()
	for _, p := range rsaPolicies(t) {
		info := p.Info()
		for _, k := range []testKey{key1024(), key2048A(), key4096()} {
			bits := k.key.N.BitLen()
			ok := bits >= info.MinAsymmetricKeyBits && bits <= info.MaxAsymmetricKeyBits
			_, errLocal := p.NewAsymmetric(k.key, nil)
			_, errRemote := p.NewAsymmetric(nil, k.cert)
			if ok {
				require.NoError(t, errLocal)
				require.NoError(t, errRemote)
			} else {
				require.ErrorIs(t, errLocal, status.BadSecurityPolicyRejected, "%s %d", info.Name, bits)
				require.ErrorIs(t, errRemote, status.BadSecurityPolicyRejected, "%s %d", info.Name, bits)
			}
		}
	}
}

// refPHash is P_hash written independently of pHash, straight from
// RFC 5246 §5, with a fresh HMAC per step.
func refPHash(newHash func() hash.Hash, secret, seed []byte, n int) []byte {
	mac := func(data ...[]byte) []byte {
		h := hmac.New(newHash, secret)
		for _, d := range data {
			h.Write(d)
		}
		return h.Sum(nil)
	}
	out := []byte{}
	a := seed
	for len(out) < n {
		a = mac(a)
		out = append(out, mac(a, seed)...)
	}
	return out[:n]
}

func TestPSHA256TLSVector(t *testing.T) {
	t.Parallel()
	// The TLS 1.2 PRF test vector from the IETF TLS WG list
	// (mail-archive/web/tls/current/msg03416.html): PRF(secret, label, seed)
	// = P_SHA256(secret, label + seed), the construction of Part 6 §6.7.5.
	secret, _ := hex.DecodeString("9bbe436ba940f017b17652849a71db35")
	seed, _ := hex.DecodeString("a0ba9f936cda311827a6f796ffd5198c")
	expected, _ := hex.DecodeString("e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a" +
		"6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab" +
		"4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff701" +
		"87347b66")
	labelSeed := append([]byte("test label"), seed...)
	got := make([]byte, len(expected))
	pHash(sha256.New, secret, labelSeed, got)
	require.Equal(t, expected, got)
	require.Equal(t, expected, refPHash(sha256.New, secret, labelSeed, len(expected)))
}

func TestPHashLengths(t *testing.T) {
	t.Parallel()
	secret, seed := []byte("server nonce"), []byte("client nonce")
	for _, h := range []func() hash.Hash{sha1.New, sha256.New} {
		for _, n := range []int{0, 1, 19, 20, 21, 48, 64, 80, 100} {
			got := make([]byte, n)
			pHash(h, secret, seed, got)
			require.Equal(t, refPHash(h, secret, seed, n), got, "n=%d", n)
		}
	}
}

// testNonces returns a fixed client and server nonce for policy p.
func testNonces(p Policy) (client, server []byte) {
	n := p.Info().NonceLength
	client, server = make([]byte, n), make([]byte, n)
	for i := range n {
		client[i] = byte(i)
		server[i] = byte(0xA0 + i)
	}
	return client, server
}

func TestDeriveKeysKnownAnswer(t *testing.T) {
	t.Parallel()
	for _, p := range rsaPolicies(t) {
		t.Run(p.Info().Name, func(t *testing.T) {
			t.Parallel()
			w := want[p.Info().URI]
			clientNonce, serverNonce := testNonces(p)
			l := w.keys
			total := l.Signing + l.Encrypting + l.Block
			// Part 6 §6.7.5 Table 61: client keys = P(ServerNonce, ClientNonce),
			// server keys = P(ClientNonce, ServerNonce).
			ck := refPHash(w.newHash, serverNonce, clientNonce, total)
			sk := refPHash(w.newHash, clientNonce, serverNonce, total)

			cSend, cRecv, err := p.DeriveKeys(Client, NonceFromBytes(clientNonce), serverNonce)
			require.NoError(t, err)
			sSend, sRecv, err := p.DeriveKeys(Server, NonceFromBytes(serverNonce), clientNonce)
			require.NoError(t, err)

			for _, c := range []struct {
				name string
				sym  Symmetric
				keys []byte
			}{{"client send", cSend, ck}, {"server recv", sRecv, ck}, {"server send", sSend, sk}, {"client recv", cRecv, sk}} {
				sign, enc, iv := c.keys[:l.Signing], c.keys[l.Signing:l.Signing+l.Encrypting], c.keys[l.Signing+l.Encrypting:]
				require.Len(t, enc, w.encryptingKeyAESBits/8)
				msg := []byte("a message chunk to protect......") // 32 bytes
				mac := hmac.New(w.newHash, sign)
				mac.Write(msg)
				require.Equal(t, mac.Sum(nil), c.sym.Sign(nil, msg), c.name)
				require.Equal(t, w.symSig, c.sym.SignatureSize())
				require.Equal(t, aes.BlockSize, c.sym.BlockSize())

				block, err := aes.NewCipher(enc)
				require.NoError(t, err)
				expected := make([]byte, len(msg))
				cipher.NewCBCEncrypter(block, iv).CryptBlocks(expected, msg)
				got := bytes.Clone(msg)
				require.NoError(t, c.sym.Encrypt(got))
				require.Equal(t, expected, got, c.name)
				// The same IV for every chunk (Part 6 §6.7.2.3).
				got = bytes.Clone(msg)
				require.NoError(t, c.sym.Encrypt(got))
				require.Equal(t, expected, got, c.name)
				require.NoError(t, c.sym.Decrypt(got))
				require.Equal(t, msg, got)
			}
		})
	}
}

func TestDeriveKeysRejectsNonces(t *testing.T) {
	t.Parallel()
	for _, p := range rsaPolicies(t) {
		clientNonce, serverNonce := testNonces(p)
		_, _, err := p.DeriveKeys(Client, NonceFromBytes(clientNonce), serverNonce[1:])
		require.ErrorIs(t, err, status.BadNonceInvalid)
		_, _, err = p.DeriveKeys(Server, NonceFromBytes(serverNonce), append(clientNonce, 1))
		require.ErrorIs(t, err, status.BadNonceInvalid)
		_, _, err = p.DeriveKeys(Client, NonceFromBytes(clientNonce[:4]), serverNonce)
		require.ErrorIs(t, err, status.BadNonceInvalid)
		_, _, err = p.DeriveKeys(Client, NonceFromBytes(clientNonce), make([]byte, len(serverNonce)))
		require.ErrorIs(t, err, status.BadNonceInvalid, "all-zero nonce")
		_, _, err = p.DeriveKeys(0, NonceFromBytes(clientNonce), serverNonce)
		require.ErrorIs(t, err, status.BadInternalError)

		n, err := p.NewNonce(rand.Reader)
		require.NoError(t, err)
		require.Len(t, n.Value, p.Info().NonceLength)
		require.NoError(t, CheckNonce(p, n.Value))
	}
	require.NoError(t, CheckNonce(None, nil))
	require.NoError(t, CheckNonce(None, []byte{1, 2, 3}))
}

// sealedChunk builds a chunk as the secure channel would: a 24-byte
// unencrypted header (message header, symmetric security header), then
// sequence header and body, padding when encrypted, and the signature.
func sealedChunk(t *testing.T, send Symmetric, body []byte, encrypt bool) (chunk []byte, pad int) {
	t.Helper()
	const headerLen = 16 // message header 12 + TokenId 4
	sig := send.SignatureSize()
	n := 8 + len(body) // sequence header + body
	chunk = make([]byte, 0, headerLen+n+send.BlockSize()+1+sig)
	chunk = append(chunk, "MSGF"...)
	chunk = append(chunk, make([]byte, headerLen-4)...)
	chunk = append(chunk, 1, 0, 0, 0, 2, 0, 0, 0) // sequence number, request id
	chunk = append(chunk, body...)
	if encrypt {
		pad = PaddingSize(n, send.BlockSize(), sig, false)
		l := PaddingLen(pad, false)
		chunk = chunk[:len(chunk)+l]
		WritePadding(chunk[len(chunk)-l:], pad, false)
		require.Zero(t, (n+l+sig)%send.BlockSize(), "encrypted part is whole blocks")
	}
	chunk = chunk[:len(chunk)+sig]
	require.NoError(t, send.Seal(chunk, headerLen, encrypt))
	return chunk, pad
}

func TestSymmetricSealOpen(t *testing.T) {
	t.Parallel()
	for _, p := range rsaPolicies(t) {
		t.Run(p.Info().Name, func(t *testing.T) {
			t.Parallel()
			clientNonce, serverNonce := testNonces(p)
			cSend, _, err := p.DeriveKeys(Client, NonceFromBytes(clientNonce), serverNonce)
			require.NoError(t, err)
			_, sRecv, err := p.DeriveKeys(Server, NonceFromBytes(serverNonce), clientNonce)
			require.NoError(t, err)
			sig := cSend.SignatureSize()

			for _, encrypt := range []bool{false, true} {
				for _, n := range []int{0, 1, 7, 8, 15, 16, 100, 1000} {
					body := bytes.Repeat([]byte{0x5A}, n)
					chunk, pad := sealedChunk(t, cSend, body, encrypt)
					wantLen := 16 + 8 + n + sig
					if encrypt {
						wantLen += pad + 1
						require.Less(t, pad, 16)
					}
					require.Len(t, chunk, wantLen)
					if encrypt && n >= 16 {
						require.False(t, bytes.Contains(chunk[16:], body[:16]), "body is encrypted")
					}

					opened := bytes.Clone(chunk)
					require.NoError(t, sRecv.Open(opened, 16, encrypt))
					plain := opened[16 : len(opened)-sig]
					if encrypt {
						k, err := StripPadding(plain, false)
						require.NoError(t, err)
						plain = plain[:k]
					}
					require.Equal(t, body, plain[8:])

					// A flipped bit anywhere fails: header, body, padding or signature.
					for _, i := range []int{0, 16, len(chunk) / 2, len(chunk) - sig - 1, len(chunk) - 1} {
						bad := bytes.Clone(chunk)
						bad[i] ^= 0x01
						require.ErrorIs(t, sRecv.Open(bad, 16, encrypt), status.BadSecurityChecksFailed, "bit at %d", i)
					}
				}
			}
			require.ErrorIs(t, sRecv.Open(make([]byte, sig-1), 0, false), status.BadSecurityChecksFailed)
			require.ErrorIs(t, sRecv.Open(make([]byte, 16+sig+3), 16, true), status.BadSecurityChecksFailed, "not whole blocks")
			require.ErrorIs(t, sRecv.Decrypt(make([]byte, 17)), status.BadSecurityChecksFailed)
			require.ErrorIs(t, cSend.Encrypt(make([]byte, 17)), status.BadInternalError)
			require.ErrorIs(t, cSend.Seal(make([]byte, 10), 20, false), status.BadInternalError)
		})
	}
}

func TestSymmetricDoesNotAllocate(t *testing.T) {
	clientNonce, serverNonce := testNonces(Basic256Sha256)
	send, _, err := Basic256Sha256.DeriveKeys(Client, NonceFromBytes(clientNonce), serverNonce)
	require.NoError(t, err)
	_, recv, err := Basic256Sha256.DeriveKeys(Server, NonceFromBytes(serverNonce), clientNonce)
	require.NoError(t, err)
	chunk := make([]byte, 16+4096+32)
	allocs := testing.AllocsPerRun(50, func() {
		if err := send.Seal(chunk, 16, true); err != nil {
			panic(err)
		}
		if err := recv.Open(chunk, 16, true); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
}

func TestNoneSymmetricAndAsymmetric(t *testing.T) {
	t.Parallel()
	send, recv, err := None.DeriveKeys(Client, Nonce{}, nil)
	require.NoError(t, err)
	require.Equal(t, 0, send.SignatureSize())
	require.Equal(t, 1, send.BlockSize())
	chunk := []byte("MSGF plain")
	require.NoError(t, send.Seal(chunk, 8, false))
	require.Equal(t, "MSGF plain", string(chunk))
	require.NoError(t, recv.Open(chunk, 8, false))
	require.NoError(t, recv.Verify(chunk, nil))
	require.ErrorIs(t, recv.Verify(chunk, []byte{1}), status.BadSecurityChecksFailed)

	a, err := None.NewAsymmetric(nil, nil)
	require.NoError(t, err)
	sig, err := a.Sign(nil, chunk)
	require.NoError(t, err)
	require.Empty(t, sig)
	require.NoError(t, a.Verify(chunk, nil))
	n, err := None.NewNonce(rand.Reader)
	require.NoError(t, err)
	require.Empty(t, n.Value)
}

func TestPadding(t *testing.T) {
	t.Parallel()
	cases := []struct {
		n, block, sig int
		extra         bool
		size          int
	}{
		// Symmetric, AES block 16, HMAC-SHA256 signature 32.
		{n: 15, block: 16, sig: 32, size: 0},  // 15+1+32 = 48
		{n: 16, block: 16, sig: 32, size: 15}, // 16+1+32 = 49 -> 64
		{n: 0, block: 16, sig: 20, size: 11},  // 0+1+20 = 21 -> 32
		{n: 30, block: 16, sig: 20, size: 13}, // 30+1+20 = 51 -> 64
		// RSA-2048 OAEP-SHA1: plain block 214, signature 256.
		{n: 100, block: 214, sig: 256, size: 71}, // 100+1+256 = 357 -> 428
		// RSA-4096 OAEP-SHA1: plain block 470, extra padding byte.
		{n: 100, block: 470, sig: 512, extra: true, size: 326}, // 100+2+512 = 614 -> 940
		{n: 400, block: 470, sig: 512, extra: true, size: 26},  // 400+2+512 = 914 -> 940
		// None.
		{n: 17, block: 1, sig: 0, size: 0},
	}
	for _, c := range cases {
		size := PaddingSize(c.n, c.block, c.sig, c.extra)
		require.Equal(t, c.size, size, "%+v", c)
		l := PaddingLen(size, c.extra)
		if c.block > 1 {
			require.Zero(t, (c.n+l+c.sig)%c.block, "%+v", c)
		}

		body := bytes.Repeat([]byte{0xEE}, c.n)
		msg := append(body, make([]byte, l)...)
		WritePadding(msg[c.n:], size, c.extra)
		if c.extra {
			require.Equal(t, byte(size>>8), msg[len(msg)-1])
			for _, b := range msg[c.n : len(msg)-1] {
				require.Equal(t, byte(size), b)
			}
		} else {
			for _, b := range msg[c.n:] {
				require.Equal(t, byte(size), b)
			}
		}
		k, err := StripPadding(msg, c.extra)
		require.NoError(t, err)
		require.Equal(t, c.n, k)
	}

	// Padding over 255 bytes needs ExtraPaddingSize.
	msg := make([]byte, 10+PaddingLen(300, true))
	WritePadding(msg[10:], 300, true)
	require.Equal(t, byte(1), msg[len(msg)-1])
	require.Equal(t, byte(300&0xFF), msg[len(msg)-2])
	k, err := StripPadding(msg, true)
	require.NoError(t, err)
	require.Equal(t, 10, k)

	require.False(t, ExtraPadding(16))
	require.False(t, ExtraPadding(256))
	require.True(t, ExtraPadding(384))
	require.True(t, ExtraPadding(512))
}

func TestStripPaddingRejects(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		b     []byte
		extra bool
	}{
		{"empty", nil, false},
		{"empty extra", []byte{0}, true},
		{"size beyond data", []byte{1, 2, 3, 9}, false},
		{"size beyond data extra", []byte{1, 2, 3, 0, 1}, true},
		{"byte mismatch", []byte{7, 7, 3, 2, 3, 3}, false},
		{"first padding byte mismatch", []byte{7, 4, 3, 3, 3}, false},
		{"extra mismatch", []byte{9, 2, 2, 1, 0}, true},
	} {
		_, err := StripPadding(c.b, c.extra)
		require.ErrorIs(t, err, status.BadSecurityChecksFailed, c.name)
	}
	k, err := StripPadding([]byte{9, 9, 0}, false)
	require.NoError(t, err)
	require.Equal(t, 2, k)
}

func TestThumbprint(t *testing.T) {
	t.Parallel()
	own := key2048A().cert
	tp := Thumbprint(own)
	require.Equal(t, sha1.Sum(own.Raw), tp)
	require.NoError(t, CheckReceiverThumbprint(tp[:], own))

	other := Thumbprint(key2048B().cert)
	require.ErrorIs(t, CheckReceiverThumbprint(other[:], own), status.BadCertificateInvalid)
	require.ErrorIs(t, CheckReceiverThumbprint(tp[:19], own), status.BadCertificateInvalid)
	require.ErrorIs(t, CheckReceiverThumbprint(nil, own), status.BadCertificateInvalid)
	require.NoError(t, CheckReceiverThumbprint(nil, nil))
	require.ErrorIs(t, CheckReceiverThumbprint(tp[:], nil), status.BadCertificateInvalid)
}

// TestAsymmetricChunk runs an OpenSecureChannel chunk through the order of
// Part 6 §6.7.2: pad, sign, encrypt in place; then decrypt in place, verify,
// strip padding. Receivers with 4096-bit keys get the ExtraPaddingSize byte.
func TestAsymmetricChunk(t *testing.T) {
	t.Parallel()
	for _, p := range rsaPolicies(t) {
		for _, pair := range keyPairs(t, p) {
			local, remote := pair[0], pair[1]
			name := fmt.Sprintf("%s/%d-%d", p.Info().Name, local.key.N.BitLen(), remote.key.N.BitLen())
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sender, err := p.NewAsymmetric(local.key, remote.cert)
				require.NoError(t, err)
				receiver, err := p.NewAsymmetric(remote.key, local.cert)
				require.NoError(t, err)
				const header = 12 + 100 // message header + a security header
				extra := ExtraPadding(sender.CiphertextBlockSize())
				require.Equal(t, remote.key.N.BitLen() > 2048, extra)
				require.Equal(t, extra, ExtraPadding(receiver.LocalCiphertextBlockSize()))

				for _, n := range []int{0, 50, 600} {
					body := bytes.Repeat([]byte{0xC3}, 8+n)
					pt, sig := sender.PlaintextBlockSize(), sender.SignatureSize()
					pad := PaddingSize(len(body), pt, sig, extra)
					plainLen := len(body) + PaddingLen(pad, extra) + sig
					require.Zero(t, plainLen%pt)

					chunk := make([]byte, header, header+sender.EncryptedLen(plainLen))
					chunk = append(chunk, body...)
					l := PaddingLen(pad, extra)
					chunk = chunk[:len(chunk)+l]
					WritePadding(chunk[len(chunk)-l:], pad, extra)
					chunk, err = sender.Sign(chunk, chunk)
					require.NoError(t, err)
					require.Len(t, chunk, header+plainLen)
					m, err := sender.Encrypt(chunk[header:cap(chunk)], chunk[header:])
					require.NoError(t, err)
					chunk = chunk[:header+m]
					require.Zero(t, m%sender.CiphertextBlockSize())

					k, err := receiver.Decrypt(chunk[header:], chunk[header:])
					require.NoError(t, err)
					require.Equal(t, plainLen, k)
					signed := chunk[:header+k-receiver.RemoteSignatureSize()]
					require.NoError(t, receiver.Verify(signed, chunk[len(signed):header+k]))
					bodyLen, err := StripPadding(signed[header:], extra)
					require.NoError(t, err)
					require.Equal(t, body, signed[header:header+bodyLen])
				}
			})
		}
	}
}
