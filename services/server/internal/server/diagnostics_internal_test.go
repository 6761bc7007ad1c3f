package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSessionEndReasons: a session closed by its client counts in neither, one that
// outlives its timeout in SessionTimeoutCount, one dropped on an error (a CreateSession
// that failed after the session was made) in SessionAbortCount.
func TestSessionEndReasons(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	d := newDiagnostics(true, func() time.Time { return now })
	ss := newSessions(10, func() time.Time { return now })
	ss.diag = d
	mk := func() sessionInfo {
		info, code := ss.create("s", time.Second, 1, nil)
		require.True(t, code.IsGood())
		return info
	}
	closed, timedOut, aborted := mk(), mk(), mk()
	require.True(t, ss.remove(closed.authToken, 1, true).IsGood(), "CloseSession")
	ss.drop(aborted.authToken)
	now = now.Add(2 * time.Second)
	_, code := ss.snapshot(timedOut.authToken)
	require.True(t, code.IsBad(), "expired")
	snap := d.buildLocked(now)
	require.EqualValues(t, 3, snap.summary.CumulatedSessionCount)
	require.EqualValues(t, 1, snap.summary.SessionTimeoutCount)
	require.EqualValues(t, 1, snap.summary.SessionAbortCount)
	require.Zero(t, snap.summary.CurrentSessionCount)
}
