package nodemgr

import "uastack.dev/pkg/codec"

// Modeler is a Manager that ships an information model of its own: UANodeSet XML
// documents (Part 6 Annex F), such as the companion specification its nodes are
// instances of and the types it defines. The server calls Models once, when it
// registers the manager and before Mount, and loads the documents into its own address
// space after the files of addressSpace.nodesets and in the order given, so that a
// model may build on those files and on the models of managers registered before. The
// namespaces of a model are the server's then, not the manager's: a manager serves its
// instances in a namespace of its own and refers to the model's types by the indexes
// Mount tells of its own URIs and the NamespaceArray gives for the model's.
//
// A document that does not load (bad XML, a required model missing) stops the server's
// start with the model's Name and the line named.
type Modeler interface {
	Models() []Model
}

// Model is one UANodeSet document a Modeler ships. NodeSet belongs to the manager; the
// server only reads it.
type Model struct {
	// Name names the document in errors, like a file name.
	Name    string
	NodeSet []byte
}

// Models is the reply to KindModels: the documents of a Modeler across a boundary,
// asked once when the host opens it.
type Models struct {
	Models []Model
}

// EncodeBinary appends m: each Model's Name (String) and NodeSet (ByteString).
func (m *Models) EncodeBinary(e *codec.Encoder) { encodeArray(e, m.Models, encModel) }

// DecodeBinary reads m as EncodeBinary writes it.
func (m *Models) DecodeBinary(d *codec.Decoder) {
	m.Models = decodeArray(d, m.Models, minModel, decModel)
}

// minModel is the smallest encoded Model: a null String and a null ByteString.
const minModel = 2 * minString

func encModel(v *Model, e *codec.Encoder) {
	e.String(v.Name)
	e.ByteString(v.NodeSet)
}

func decModel(v *Model, d *codec.Decoder) {
	v.Name = d.String()
	v.NodeSet = d.ByteString()
}
