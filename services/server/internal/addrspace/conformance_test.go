package addrspace

import (
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/nodemgr/nodemgrtest"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
)

// TestConformance: namespace 0 alone, as a server without the demo namespace serves it,
// passes the node-manager conformance kit. Namespace 0 has no Variable a client may
// write, so the fixture adds one (the demo namespace's own run covers methods).
func TestConformance(t *testing.T) {
	writable := codec.NewNumericNodeId(0, 1_000_000)
	nodemgrtest.Run(t, nodemgrtest.Fixture{
		New: func(t testing.TB) nodemgr.Manager {
			s := NewNamespace0()
			err := s.AddNode(Node{NodeId: writable, NodeClass: ua.NodeClassVariable,
				BrowseName: codec.QualifiedName{Name: "Writable"}, DisplayName: codec.LocalizedText{Text: "Writable"},
				DataType: codec.NewNumericNodeId(0, id.Double), ValueRank: -1, Value: codec.DoubleVariant(0),
				AccessLevel: uint8(ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite),
				References: []Reference{
					{ReferenceTypeId: codec.NewNumericNodeId(0, id.Organizes), TargetId: codec.NewNumericNodeId(0, id.ObjectsFolder)},
					{ReferenceTypeId: codec.NewNumericNodeId(0, id.HasTypeDefinition), TargetId: codec.NewNumericNodeId(0, id.BaseDataVariableType), IsForward: true},
				}})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		NamespaceIndexes: []uint16{0},
		Capabilities:     nodemgr.CapRead | nodemgr.CapWrite | nodemgr.CapBrowse | nodemgr.CapCall,
		Principal:        nodemgr.Principal{Anonymous: true},
		Readable:         codec.NewNumericNodeId(0, id.Server_ServerStatus_State),
		Writable:         writable,
		WriteValue:       codec.DoubleVariant(21.5),
		NotWritable:      codec.NewNumericNodeId(0, id.Server_ServerStatus_State),
		Browsable:        codec.NewNumericNodeId(0, id.ObjectsFolder),
		Unknown:          codec.NewNumericNodeId(0, 999_999_999),
	})
}
