package child

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
)

func TestMain(m *testing.M) {
	Dispatch()
	os.Exit(m.Run())
}

func frame(size int, id uint32) []byte {
	f := make([]byte, size)
	copy(f, "MSGF")
	binary.LittleEndian.PutUint32(f[4:], uint32(size))
	binary.LittleEndian.PutUint32(f[20:], id)
	return f
}

// TestEcho sends three frames and a half in one write, then the rest: the echo child
// answers each complete frame with its response, request id copied, and nothing for the
// incomplete one until it is complete.
func TestEcho(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := frame(40, 0)
	copy(resp[24:], "response")
	p, err := Start(ctx, "echo", hex.EncodeToString(resp))
	require.NoError(t, err)
	defer p.Stop()
	c, err := net.Dial("tcp", p.Addr)
	require.NoError(t, err)
	defer c.Close()
	var out []byte
	for id := uint32(1); id <= 4; id++ {
		out = append(out, frame(100, id)...)
	}
	_, err = c.Write(out[:350])
	require.NoError(t, err)
	got := make([]byte, 3*40)
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	_, err = c.Write(out[350:])
	require.NoError(t, err)
	last := make([]byte, 40)
	_, err = io.ReadFull(c, last)
	require.NoError(t, err)
	got = append(got, last...)
	for i := range 4 {
		f := got[i*40 : (i+1)*40]
		require.Equal(t, uint32(i+1), binary.LittleEndian.Uint32(f[20:]))
		require.Equal(t, "response", string(f[24:32]))
	}
}

// TestGopcua starts gopcua's server as a child and asks it for its endpoints.
func TestGopcua(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := Start(ctx, "gopcua")
	require.NoError(t, err)
	defer p.Stop()
	require.True(t, strings.HasPrefix(p.Addr, "opc.tcp://127.0.0.1:"), p.Addr)
	eps, err := client.GetEndpoints(ctx, p.Addr)
	require.NoError(t, err)
	require.NotEmpty(t, eps)
}

func TestUnknownChild(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Start(ctx, "nonesuch")
	require.Error(t, err)
}
