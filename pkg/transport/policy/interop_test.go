package policy

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/gopcua/opcua/uapolicy"
	"github.com/stretchr/testify/require"
)

// gopcua's uapolicy is an independent implementation of the same policies:
// what one side encrypts or signs the other must decrypt or verify, and both
// must derive the same keys from the same nonces.

func TestInteropGopcuaAsymmetric(t *testing.T) {
	t.Parallel()
	for _, p := range rsaPolicies(t) {
		for _, pair := range keyPairs(t, p) {
			local, remote := pair[0], pair[1]
			name := fmt.Sprintf("%s/%d-%d", p.Info().Name, local.key.N.BitLen(), remote.key.N.BitLen())
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				uri := p.Info().URI
				// ours is the local end, theirs the remote end.
				ours, err := p.NewAsymmetric(local.key, remote.cert)
				require.NoError(t, err)
				theirs, err := uapolicy.Asymmetric(uri, remote.key, &local.key.PublicKey)
				require.NoError(t, err)
				require.Equal(t, ours.SignatureSize(), theirs.RemoteSignatureLength())
				require.Equal(t, ours.RemoteSignatureSize(), theirs.SignatureLength())

				msg := make([]byte, 3*ours.PlaintextBlockSize()+17)
				_, _ = rand.Read(msg)

				// Signatures both ways.
				sig, err := ours.Sign(nil, msg)
				require.NoError(t, err)
				require.NoError(t, theirs.VerifySignature(msg, sig))
				sig, err = theirs.Signature(msg)
				require.NoError(t, err)
				require.NoError(t, ours.Verify(msg, sig))

				// Ours encrypts for them.
				buf := make([]byte, ours.EncryptedLen(len(msg)))
				n, err := ours.Encrypt(buf, msg)
				require.NoError(t, err)
				plain, err := theirs.Decrypt(buf[:n])
				require.NoError(t, err)
				require.Equal(t, msg, plain)

				// They encrypt for us (gopcua may cut blocks differently; the
				// cipher text is still whole blocks of our key size).
				ct, err := theirs.Encrypt(msg)
				require.NoError(t, err)
				k, err := ours.Decrypt(ct, ct)
				require.NoError(t, err)
				require.Equal(t, msg, ct[:k])
			})
		}
	}
}

func TestInteropGopcuaSymmetric(t *testing.T) {
	t.Parallel()
	for _, p := range rsaPolicies(t) {
		t.Run(p.Info().Name, func(t *testing.T) {
			t.Parallel()
			uri := p.Info().URI
			clientNonce, serverNonce := testNonces(p)
			// gopcua as the client, ours as the client and as the server.
			theirs, err := uapolicy.Symmetric(uri, clientNonce, serverNonce)
			require.NoError(t, err)
			cSend, cRecv, err := p.DeriveKeys(Client, NonceFromBytes(clientNonce), serverNonce)
			require.NoError(t, err)
			sSend, sRecv, err := p.DeriveKeys(Server, NonceFromBytes(serverNonce), clientNonce)
			require.NoError(t, err)
			require.Equal(t, theirs.SignatureLength(), cSend.SignatureSize())
			require.Equal(t, theirs.BlockSize(), cSend.BlockSize())

			msg := bytes.Repeat([]byte("0123456789abcdef"), 9)

			// Their client signs and encrypts exactly as ours does.
			sig, err := theirs.Signature(msg)
			require.NoError(t, err)
			require.Equal(t, sig, cSend.Sign(nil, msg))
			require.NoError(t, sRecv.Verify(msg, sig))
			ct, err := theirs.Encrypt(msg)
			require.NoError(t, err)
			buf := bytes.Clone(msg)
			require.NoError(t, cSend.Encrypt(buf))
			require.Equal(t, ct, buf)
			require.NoError(t, sRecv.Decrypt(buf))
			require.Equal(t, msg, buf)

			// What our server sends, their client verifies and decrypts.
			buf = bytes.Clone(msg)
			require.NoError(t, theirs.VerifySignature(msg, sSend.Sign(nil, msg)))
			require.NoError(t, sSend.Encrypt(buf))
			plain, err := theirs.Decrypt(buf)
			require.NoError(t, err)
			require.Equal(t, msg, plain)
			require.NoError(t, cRecv.Decrypt(buf))
			require.Equal(t, msg, buf)
		})
	}
}
