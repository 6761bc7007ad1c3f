package uaserver

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNamedIdentity: a name is an application of its own, and the same name under the
// same folder is the same certificate, as a child process of a suite opens it.
func TestNamedIdentity(t *testing.T) {
	dir := t.TempDir()
	a, err := NewNamedIdentity(dir, "storm-rude")
	require.NoError(t, err)
	defer a.PKI.Close()
	require.Equal(t, "urn:uastack:bench:storm-rude", a.URI)
	again, err := NewNamedIdentity(dir, "storm-rude")
	require.NoError(t, err)
	defer again.PKI.Close()
	require.Equal(t, a.DER, again.DER)
	require.True(t, a.Key.Equal(again.Key))
	b, err := NewIdentity(dir)
	require.NoError(t, err)
	defer b.PKI.Close()
	require.Equal(t, "urn:uastack:bench:client", b.URI)
	require.NotEqual(t, a.DER, b.DER)
}
