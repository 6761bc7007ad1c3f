package mirror

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/mirror/natsnode"
)

// TestSessionMessages: a takeover reads the last message of every subject of a session's
// subscriptions, all of them and only the session's, with direct gets where the stream
// allows them and from the leader subject by subject where it does not; a session with
// no message reads as none.
func TestSessionMessages(t *testing.T) {
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
			stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: subsStream(cluster), Subjects: []string{cluster + ".sub.>"},
				Storage: jetstream.FileStorage, MaxMsgsPerSubject: 1, AllowDirect: direct})
			require.NoError(t, err)
			m := &Mirror{nc: nc, subs: stream, cfg: Config{Cluster: cluster}}
			// Twenty subscriptions (more than one multi_last request holds) of session
			// "a", each with a snapshot and changes 1 to 3, the third in the first
			// change's slot again; one subscription of session "b".
			want := make(map[string][]byte)
			publish := func(subject string, body byte) {
				_, err := js.Publish(ctx, subject, []byte{body})
				require.NoError(t, err)
				if strings.HasPrefix(subject, m.subPrefix("a")) {
					want[subject] = []byte{body}
				}
			}
			for id := uint32(1); id <= 20; id++ {
				publish(m.snapSubject("a", id), 0)
				for n := uint64(1); n <= 3; n++ {
					publish(m.changeSubject("a", id, n%2+changeSlots), byte(n))
				}
			}
			publish(m.snapSubject("b", 1), 9)
			msgs, err := m.sessionMessages(ctx, "a")
			require.NoError(t, err)
			got := make(map[string][]byte)
			for _, msg := range msgs {
				got[msg.Subject] = msg.Data
				require.False(t, msg.Time.IsZero())
			}
			require.Len(t, msgs, 60, "one message a subject")
			require.Equal(t, want, got)
			last, err := m.leaderGet(ctx, msgGet{LastFor: m.subPrefix("a") + ">"})
			require.NoError(t, err)
			dmsgs, upTo, ok := m.directSession(ctx, "a")
			require.Equal(t, direct, ok, "the direct gets answer where the stream allows them")
			if direct {
				require.Len(t, dmsgs, 60)
				require.GreaterOrEqual(t, upTo, last.Sequence, "the replica had reached the leader's last message")
			}

			msgs, err = m.sessionMessages(ctx, "c")
			require.NoError(t, err)
			require.Empty(t, msgs)
		})
	}
}
