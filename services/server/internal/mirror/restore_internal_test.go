package mirror

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/mirror/natsnode"
)

// TestSubjectMessages: a takeover reads a subject's messages in order, all of them and
// only its own, with one direct get where the stream allows it and from the leader one
// by one where it does not; a subject with no message reads as none.
func TestSubjectMessages(t *testing.T) {
	node, err := natsnode.Start(natsnode.Config{DataDir: filepath.Join(t.TempDir(), "nats")})
	require.NoError(t, err)
	t.Cleanup(node.Shutdown)
	nc, err := nats.Connect(node.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, direct := range []bool{true, false} {
		cluster := map[bool]string{true: "direct", false: "leader"}[direct]
		t.Run(cluster, func(t *testing.T) {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: subsStream(cluster), Subjects: []string{cluster + ".sub.>"},
				Storage: jetstream.FileStorage, AllowRollup: true, AllowDirect: direct})
			require.NoError(t, err)
			m := &Mirror{nc: nc, cfg: Config{Cluster: cluster}}
			one, two := cluster+".sub.s.1", cluster+".sub.s.2"
			var want []uint64
			for i, subject := range []string{one, two, one, two, one} {
				ack, err := js.Publish(ctx, subject, []byte{byte(i)})
				require.NoError(t, err)
				if subject == one {
					want = append(want, ack.Sequence)
				}
			}
			msgs, err := m.subjectMessages(ctx, one, 10)
			require.NoError(t, err)
			var got []uint64
			for i, msg := range msgs {
				got = append(got, msg.Sequence)
				require.Equal(t, []byte{byte(2 * i)}, msg.Data)
			}
			require.Equal(t, want, got)

			msgs, err = m.subjectMessages(ctx, cluster+".sub.s.3", 10)
			require.NoError(t, err)
			require.Empty(t, msgs)
		})
	}
}
