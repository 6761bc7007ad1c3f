package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// TestPerUserWriteAccess writes Demo/Protected/Setpoint through gopcua: anonymously and
// as a user without roles it is BadUserAccessDenied and UserAccessLevel lacks
// CurrentWrite; as a user with the Operator role the write succeeds, UserAccessLevel has
// CurrentWrite, and everyone reads the new value. An ordinary demo variable stays
// writable by anyone.
func TestPerUserWriteAccess(t *testing.T) {
	t.Parallel()
	hash, err := cheapHash("pw")
	require.NoError(t, err)
	ts := servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.Users = []config.User{
			{Name: "olga", PasswordHash: hash, Roles: []string{"Observer", "Operator"}},
			{Name: "victor", PasswordHash: hash},
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	none, anon := ua.SecurityPolicyURINone, ua.MessageSecurityModeNone
	anonymous := connect(t, ctx, ts.URL, none, anon, ua.UserTokenTypeAnonymous)
	defer anonymous.Close(ctx)
	operator := connect(t, ctx, ts.URL, none, anon, ua.UserTokenTypeUserName, opcua.AuthUsername("olga", "pw"))
	defer operator.Close(ctx)
	plain := connect(t, ctx, ts.URL, none, anon, ua.UserTokenTypeUserName, opcua.AuthUsername("victor", "pw"))
	defer plain.Close(ctx)

	setpoint := ua.NewStringNodeID(1, "Demo.Protected.Setpoint")
	write := func(c *opcua.Client, node *ua.NodeID, v float64) ua.StatusCode {
		t.Helper()
		resp, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{
			NodeID: node, AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)},
		}}})
		require.NoError(t, err)
		require.Len(t, resp.Results, 1)
		return resp.Results[0]
	}
	read := func(c *opcua.Client, a ua.AttributeID) any {
		t.Helper()
		resp, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: setpoint, AttributeID: a}}})
		require.NoError(t, err)
		require.Equal(t, ua.StatusOK, resp.Results[0].Status)
		return resp.Results[0].Value.Value()
	}
	// Setpoint keeps its history, which only an Operator may update (HistoryWrite).
	const hist = byte(ua.AccessLevelTypeHistoryRead | ua.AccessLevelTypeHistoryWrite)
	const rw = byte(ua.AccessLevelTypeCurrentRead|ua.AccessLevelTypeCurrentWrite) | hist

	require.Equal(t, ua.StatusBadUserAccessDenied, write(anonymous, setpoint, 1))
	require.Equal(t, ua.StatusBadUserAccessDenied, write(plain, setpoint, 2))
	require.Equal(t, byte(ua.AccessLevelTypeCurrentRead|ua.AccessLevelTypeHistoryRead), read(anonymous, ua.AttributeIDUserAccessLevel))
	require.Equal(t, byte(ua.AccessLevelTypeCurrentRead|ua.AccessLevelTypeHistoryRead), read(plain, ua.AttributeIDUserAccessLevel))
	require.Equal(t, rw, read(anonymous, ua.AttributeIDAccessLevel))
	require.Equal(t, float64(0), read(anonymous, ua.AttributeIDValue))

	require.Equal(t, ua.StatusOK, write(operator, setpoint, 3))
	require.Equal(t, rw, read(operator, ua.AttributeIDUserAccessLevel))
	require.Equal(t, float64(3), read(anonymous, ua.AttributeIDValue))

	require.Equal(t, ua.StatusOK, write(anonymous, ua.NewStringNodeID(1, "Demo.Scalar_Double"), 4))
}
