package nodesets_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/addrspace"
	"uastack.dev/services/server/internal/nodesets"
)

// browse returns the references of node in dir.
func browse(t *testing.T, space *addrspace.Space, node codec.NodeId, dir ua.BrowseDirection) []ua.ReferenceDescription {
	t.Helper()
	op := &nodemgr.BrowseOp{Items: []ua.BrowseDescription{{NodeId: node, BrowseDirection: dir,
		ReferenceTypeId: codec.NewNumericNodeId(0, id.References), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}},
		Results: make([]nodemgr.BrowseResult, 1)}
	space.Browse(context.Background(), op, func() {})
	require.Equal(t, status.Good, op.Results[0].Status)
	return op.Results[0].References
}

// TestInstallReferencesOnce: DI gives the references of its type members at both ends;
// each is there once in each direction, and one from namespace 0 (DeviceSet organized
// by the Objects folder) is seen from the Objects folder.
func TestInstallReferencesOnce(t *testing.T) {
	set, err := nodesets.Load([]string{addrspace.NamespaceURI0}, []string{diFile}, nil)
	require.NoError(t, err)
	space := addrspace.New(set.Namespaces()...)
	require.NoError(t, set.Install(space))
	require.Zero(t, set.Len(), "the records are let go")

	deviceType := codec.NewNumericNodeId(1, 1002)
	serial := codec.NewNumericNodeId(1, 6001)
	count := func(refs []ua.ReferenceDescription, target codec.NodeId) int {
		n := 0
		for _, r := range refs {
			if r.NodeId.NodeId == target {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, count(browse(t, space, deviceType, ua.BrowseDirectionForward), serial))
	require.Equal(t, 1, count(browse(t, space, serial, ua.BrowseDirectionInverse), deviceType))
	require.Equal(t, 1, count(browse(t, space, codec.NewNumericNodeId(0, id.ObjectsFolder), ua.BrowseDirectionForward), codec.NewNumericNodeId(1, 5001)))
	seen := map[string]bool{}
	for _, r := range browse(t, space, deviceType, ua.BrowseDirectionBoth) {
		key := r.ReferenceTypeId.String() + r.NodeId.NodeId.String()
		if r.IsForward {
			key += ">"
		}
		require.False(t, seen[key], "reference %s twice", key)
		seen[key] = true
	}
}
