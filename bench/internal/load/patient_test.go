package load

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/uacp"
)

// TestPatiently: the bench's own clients retry a busy or full server and nothing else.
func TestPatiently(t *testing.T) {
	ctx := context.Background()
	tries := 0
	err := Patiently(ctx, func() error {
		tries++
		switch tries {
		case 1:
			return &uacp.Error{Code: status.BadTcpServerTooBusy}
		case 2:
			return fmt.Errorf("load: CreateSession: %w", status.BadTooManySessions)
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, tries)

	tries = 0
	err = Patiently(ctx, func() error {
		tries++
		return fmt.Errorf("load: ActivateSession: %w", status.BadIdentityTokenRejected)
	})
	require.ErrorIs(t, err, status.BadIdentityTokenRejected)
	require.Equal(t, 1, tries, "a refusal for good is not retried")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = Patiently(cctx, func() error { return &uacp.Error{Code: status.BadTcpNotEnoughResources} })
	require.ErrorIs(t, err, context.Canceled)
}
