package nodesets_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
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

// TestInstallAccess: a Variable's AccessLevel and UserAccessLevel as the model gives
// them: writable by all, by nobody (UserAccessLevel without CurrentWrite), read-only;
// Historizing kept.
func TestInstallAccess(t *testing.T) {
	doc := `<UANodeSet xmlns="http://opcfoundation.org/UA/2011/03/UANodeSet.xsd">
  <NamespaceUris><Uri>urn:access</Uri></NamespaceUris>
  <UAVariable NodeId="ns=1;i=1" BrowseName="1:Open" DataType="i=11" AccessLevel="3" UserAccessLevel="3" Historizing="true"><Value><Double>1</Double></Value></UAVariable>
  <UAVariable NodeId="ns=1;i=2" BrowseName="1:Guarded" DataType="i=11" AccessLevel="3" UserAccessLevel="1"><Value><Double>2</Double></Value></UAVariable>
  <UAVariable NodeId="ns=1;i=3" BrowseName="1:Fixed" DataType="i=11"><Value><Double>3</Double></Value></UAVariable>
</UANodeSet>`
	file := filepath.Join(t.TempDir(), "access.xml")
	require.NoError(t, os.WriteFile(file, []byte(doc), 0o600))
	set, err := nodesets.Load([]string{addrspace.NamespaceURI0}, []string{file}, nil)
	require.NoError(t, err)
	space := addrspace.New(set.Namespaces()...)
	require.NoError(t, set.Install(space))

	ids := []codec.NodeId{codec.NewNumericNodeId(1, 1), codec.NewNumericNodeId(1, 2), codec.NewNumericNodeId(1, 3)}
	w := &nodemgr.WriteOp{Results: make([]status.Code, 3)}
	for _, n := range ids {
		w.Items = append(w.Items, ua.WriteValue{NodeId: n, AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: codec.DoubleVariant(9)}})
	}
	space.Write(context.Background(), w, func() {})
	require.Equal(t, []status.Code{status.Good, status.BadUserAccessDenied, status.BadNotWritable}, w.Results)

	r := &nodemgr.ReadOp{Results: make([]codec.DataValue, 4)}
	for _, n := range ids {
		r.Items = append(r.Items, ua.ReadValueId{NodeId: n, AttributeId: uint32(attr.UserAccessLevel)})
	}
	r.Items = append(r.Items, ua.ReadValueId{NodeId: ids[0], AttributeId: uint32(attr.Historizing)})
	space.Read(context.Background(), r, func() {})
	got := make([]any, len(r.Results))
	for i := range r.Results {
		require.Equal(t, status.Good, r.Results[i].Status)
		got[i] = r.Results[i].Value.Value()
	}
	require.Equal(t, []any{byte(3), byte(1), byte(1), true}, got)
}
