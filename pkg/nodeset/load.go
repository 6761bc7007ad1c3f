package nodeset

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/pkg/ua/ns0"
)

// Reference is a reference of a Node, as seen from that node.
type Reference struct {
	ReferenceTypeId codec.NodeId
	TargetId        codec.NodeId
	IsForward       bool
}

// Node is one node of a nodeset with its NodeIds in the server's namespaces. Fields a
// NodeClass does not have are zero. Line is where the node starts in File.
type Node struct {
	File string
	Line int

	NodeId        codec.NodeId
	NodeClass     ua.NodeClass
	BrowseName    codec.QualifiedName
	DisplayName   codec.LocalizedText
	Description   codec.LocalizedText
	WriteMask     uint32
	UserWriteMask uint32
	SymbolicName  string
	ParentNodeId  codec.NodeId
	// AccessRestrictions is the attribute, 0 when the file leaves it out.
	AccessRestrictions uint16
	References         []Reference

	IsAbstract      bool                // types
	Symmetric       bool                // ReferenceType
	InverseName     codec.LocalizedText // ReferenceType
	EventNotifier   uint8               // Object, View
	ContainsNoLoops bool                // View

	DataType                codec.NodeId // Variable, VariableType
	ValueRank               int32
	ArrayDimensions         []uint32
	AccessLevel             uint8 // Variable
	UserAccessLevel         uint8
	MinimumSamplingInterval float64
	Historizing             bool
	// Value is the Variable's or VariableType's value; null when the file gives none.
	Value codec.Variant

	Executable          bool // Method
	UserExecutable      bool
	MethodDeclarationId codec.NodeId

	// DataTypeDefinition is a DataType's StructureDefinition or EnumDefinition in an
	// ExtensionObject (attribute 23), null when the file gives none.
	DataTypeDefinition codec.Variant
}

// Model is a model a nodeset defines (its Models table).
type Model struct {
	URI             string
	Version         string
	PublicationDate string
	Required        []RequiredModel
}

// RequiredModel is a model a Model is built on.
type RequiredModel struct {
	URI     string
	Version string
}

// Result is what one file added.
type Result struct {
	File   string
	Models []Model
	Nodes  []Node
	// Types are the structures the file defines, to be registered with
	// codec.RegisterDynamic so that clients can write them.
	Types []*codec.DynamicType
}

// Loader loads nodesets one after the other into one server's namespaces. It is not
// safe for concurrent use.
type Loader struct {
	namespaces []string
	nsIndex    map[string]uint16
	models     map[string]string // URI -> version

	// What the files loaded so far define of the type system; namespace 0 is read from
	// its generated tables.
	super     map[codec.NodeId]codec.NodeId // a type's supertype
	encodings map[codec.NodeId]codec.NodeId // an encoding node's DataType
	binary    map[codec.NodeId]codec.NodeId // a DataType's "Default Binary" encoding
	defs      map[codec.NodeId]*ua.StructureDefinition
	names     map[codec.NodeId]string
	// dynamic are the types made so far (nodesets' and the templates of namespace 0
	// structures read from XML), by DataType.
	dynamic map[codec.NodeId]*codec.DynamicType
}

// NewLoader returns a Loader for a server whose NamespaceArray starts with namespaces
// (namespace 0 first); a nodeset's URIs that are not there are appended in order.
func NewLoader(namespaces []string) *Loader {
	l := &Loader{
		nsIndex:   make(map[string]uint16),
		models:    map[string]string{ua0: ns0Version()},
		super:     make(map[codec.NodeId]codec.NodeId),
		encodings: make(map[codec.NodeId]codec.NodeId),
		binary:    make(map[codec.NodeId]codec.NodeId),
		defs:      make(map[codec.NodeId]*ua.StructureDefinition),
		names:     make(map[codec.NodeId]string),
		dynamic:   make(map[codec.NodeId]*codec.DynamicType),
	}
	if len(namespaces) == 0 {
		namespaces = []string{ua0}
	}
	for _, u := range namespaces {
		l.namespace(u)
	}
	return l
}

// ua0 is the URI of namespace 0.
const ua0 = "http://opcfoundation.org/UA/"

// ns0Version is the version of the namespace 0 model of the generated tables.
func ns0Version() string {
	if n, ok := ns0.Lookup(id.OPCUANamespaceMetadata_NamespaceVersion); ok {
		if v, err := n.Value(); err == nil {
			if s, ok := v.Value().(string); ok {
				return s
			}
		}
	}
	return ""
}

// namespace returns the index of uri, adding it when new.
func (l *Loader) namespace(uri string) uint16 {
	if i, ok := l.nsIndex[uri]; ok {
		return i
	}
	i := uint16(len(l.namespaces))
	l.namespaces = append(l.namespaces, uri)
	l.nsIndex[uri] = i
	return i
}

// Namespaces returns the NamespaceArray: the one given to NewLoader and the URIs the
// files added. The caller must not modify it.
func (l *Loader) Namespaces() []string { return l.namespaces }

// Models returns the URIs and versions of the models loaded, namespace 0 included.
func (l *Loader) Models() map[string]string { return l.models }

// fileState is what reading one file needs beyond the Loader.
type fileState struct {
	*Loader
	doc *document
	// nsMap maps the file's namespace indexes to the server's.
	nsMap []uint16
}

func (f *fileState) errorf(line int, format string, args ...any) error {
	return &Error{File: f.doc.file, Line: line, Err: fmt.Errorf(format, args...)}
}

// Load reads the UANodeSet in r, named file in errors. Its models' required models must
// be loaded already (namespace 0 is) at their version or later. Nothing of a file that
// fails is kept, apart from the namespaces it registered.
func (l *Loader) Load(r io.Reader, file string) (*Result, error) {
	doc := &document{file: file, aliases: make(map[string]string)}
	f := &fileState{Loader: l, doc: doc, nsMap: []uint16{0}}
	res := &Result{File: file}
	// The tables come first; they are taken in at the first node (or the end).
	started := false
	begin := func() error {
		started = true
		for _, m := range doc.models {
			model, err := f.model(m)
			if err != nil {
				return err
			}
			res.Models = append(res.Models, model)
		}
		for _, u := range doc.namespaces {
			if u == "" {
				return f.errorf(0, "empty namespace URI")
			}
			f.nsMap = append(f.nsMap, l.namespace(u))
		}
		return nil
	}
	var chunks [][]Node
	// kept are the elements read once the type system is known: a Variable's Value, a
	// DataType's Definition; nil for the other nodes.
	var kept []*element
	err := parse(r, doc, func(e *element) error {
		if !started {
			if err := begin(); err != nil {
				return err
			}
		}
		// In chunks, copied once at the end: appending a slice of nodes this size
		// copies it over and over as it grows.
		if len(chunks) == 0 || len(chunks[len(chunks)-1]) == cap(chunks[len(chunks)-1]) {
			size := nodeChunk
			if len(chunks) < 6 {
				size >>= 6 - len(chunks) // small files take small chunks
			}
			chunks = append(chunks, make([]Node, 0, size))
		}
		c := &chunks[len(chunks)-1]
		*c = append(*c, Node{})
		if err := f.node(e, &(*c)[len(*c)-1]); err != nil {
			return err
		}
		var k *element
		for _, c := range e.Children {
			if c.Name == "Value" || c.Name == "Definition" {
				if k == nil {
					k = &element{Name: e.Name, Line: e.Line}
				}
				k.Children = append(k.Children, c)
			}
		}
		kept = append(kept, k)
		return nil
	})
	if err == nil && !started {
		err = begin()
	}
	if err != nil {
		return nil, err
	}
	nodes := slices.Concat(chunks...)
	chunks = nil
	// The type system first, so that values and definitions can name types of the file.
	added := f.learnTypes(nodes)
	fail := func(err error) (*Result, error) {
		f.forget(added)
		return nil, err
	}
	for i := range nodes {
		n := &nodes[i]
		if n.NodeClass != ua.NodeClassDataType || kept[i] == nil {
			continue
		}
		if d := kept[i].child("Definition"); d != nil {
			if err := f.definition(n, d); err != nil {
				return fail(err)
			}
		}
	}
	for i := range nodes {
		n := &nodes[i]
		if n.NodeClass == ua.NodeClassDataType && f.defs[n.NodeId] != nil && !n.IsAbstract {
			t, err := f.dynamicType(n.NodeId, 0)
			if err != nil {
				return fail(f.errorf(n.Line, "%v", err))
			}
			res.Types = append(res.Types, t)
		}
	}
	for i := range nodes {
		if kept[i] == nil || (nodes[i].NodeClass != ua.NodeClassVariable && nodes[i].NodeClass != ua.NodeClassVariableType) {
			continue
		}
		v := kept[i].child("Value")
		if v == nil {
			continue
		}
		val, err := f.value(v)
		if err != nil {
			return fail(err)
		}
		nodes[i].Value = val
		kept[i] = nil
	}
	for _, m := range res.Models {
		l.models[m.URI] = m.Version
	}
	res.Nodes = nodes
	return res, nil
}

// model reads one Model and checks its required models.
func (f *fileState) model(e *element) (Model, error) {
	var m Model
	m.URI, _ = e.attr("ModelUri")
	m.Version, _ = e.attr("Version")
	m.PublicationDate, _ = e.attr("PublicationDate")
	if m.URI == "" {
		return m, f.errorf(e.Line, "Model without ModelUri")
	}
	if _, ok := f.models[m.URI]; ok {
		return m, f.errorf(e.Line, "model %s is loaded already", m.URI)
	}
	for _, r := range e.Children {
		if r.Name != "RequiredModel" {
			continue
		}
		var req RequiredModel
		req.URI, _ = r.attr("ModelUri")
		req.Version, _ = r.attr("Version")
		have, ok := f.models[req.URI]
		if !ok {
			return m, &Error{File: f.doc.file, Line: r.Line, Err: fmt.Errorf("%w: %s (version %s), required by %s", ErrMissingModel, req.URI, req.Version, m.URI)}
		}
		if olderVersion(have, req.Version) {
			return m, f.errorf(r.Line, "model %s is loaded at version %s; %s requires %s", req.URI, have, m.URI, req.Version)
		}
		m.Required = append(m.Required, req)
	}
	return m, nil
}

// olderVersion reports whether version a is older than b, comparing dotted numbers
// ("1.04.0" < "1.05.01"); a part that is not a number compares as text, an empty version
// is not older than any.
func olderVersion(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errx := strconv.Atoi(as[i])
		y, erry := strconv.Atoi(bs[i])
		switch {
		case errx == nil && erry == nil && x != y:
			return x < y
		case (errx != nil || erry != nil) && as[i] != bs[i]:
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}

// nodeId reads a NodeId of the file: an alias or a NodeId in the file's namespace
// indexes, mapped to the server's.
func (f *fileState) nodeId(s string, line int) (codec.NodeId, error) {
	s = strings.TrimSpace(s)
	if a, ok := f.doc.aliases[s]; ok {
		s = a
	}
	n, err := codec.ParseNodeId(s)
	if err != nil {
		if !strings.Contains(s, "=") {
			return n, f.errorf(line, "unknown alias %q", s)
		}
		return n, f.errorf(line, "bad NodeId %q: %v", s, err)
	}
	return f.mapNodeId(n, line)
}

// mapNodeId maps the namespace index of n from the file's to the server's.
func (f *fileState) mapNodeId(n codec.NodeId, line int) (codec.NodeId, error) {
	ns := n.Namespace()
	if int(ns) >= len(f.nsMap) {
		return n, f.errorf(line, "namespace index %d is not in the file's NamespaceUris", ns)
	}
	return n.InNamespace(f.nsMap[ns]), nil
}

// qualifiedName reads "n:Name" with n an index of the file's namespaces.
func (f *fileState) qualifiedName(s string, line int) (codec.QualifiedName, error) {
	if i := strings.IndexByte(s, ':'); i > 0 {
		if ns, err := strconv.ParseUint(s[:i], 10, 16); err == nil {
			if int(ns) >= len(f.nsMap) {
				return codec.QualifiedName{}, f.errorf(line, "namespace index %d is not in the file's NamespaceUris", ns)
			}
			return codec.QualifiedName{NamespaceIndex: f.nsMap[ns], Name: s[i+1:]}, nil
		}
	}
	return codec.QualifiedName{Name: s}, nil
}

// node reads the attributes and references of one node element.
func (f *fileState) node(e *element, n *Node) error {
	n.File, n.Line = f.doc.file, e.Line
	n.NodeClass = map[string]ua.NodeClass{"UAObject": ua.NodeClassObject, "UAVariable": ua.NodeClassVariable,
		"UAMethod": ua.NodeClassMethod, "UAView": ua.NodeClassView, "UAObjectType": ua.NodeClassObjectType,
		"UAVariableType": ua.NodeClassVariableType, "UADataType": ua.NodeClassDataType,
		"UAReferenceType": ua.NodeClassReferenceType}[e.Name]
	s, ok := e.attr("NodeId")
	if !ok {
		return f.errorf(e.Line, "%s without NodeId", e.Name)
	}
	var err error
	if n.NodeId, err = f.nodeId(s, e.Line); err != nil {
		return err
	}
	s, ok = e.attr("BrowseName")
	if !ok {
		return f.errorf(e.Line, "%s %s without BrowseName", e.Name, n.NodeId)
	}
	if n.BrowseName, err = f.qualifiedName(s, e.Line); err != nil {
		return err
	}
	a := attrs{f: f, e: e}
	n.WriteMask = uint32(a.uint("WriteMask", 0, 32))
	n.UserWriteMask = uint32(a.uint("UserWriteMask", 0, 32))
	n.AccessRestrictions = uint16(a.uint("AccessRestrictions", 0, 16))
	n.SymbolicName, _ = e.attr("SymbolicName")
	if p, ok := e.attr("ParentNodeId"); ok {
		n.ParentNodeId = a.nodeId(p)
	}
	switch n.NodeClass {
	case ua.NodeClassObject:
		n.EventNotifier = uint8(a.uint("EventNotifier", 0, 8))
	case ua.NodeClassView:
		n.EventNotifier = uint8(a.uint("EventNotifier", 0, 8))
		n.ContainsNoLoops = a.bool("ContainsNoLoops", false)
	case ua.NodeClassVariable, ua.NodeClassVariableType:
		n.DataType = a.nodeId(a.str("DataType", "i=24"))
		n.ValueRank = int32(a.int("ValueRank", -1))
		n.ArrayDimensions = a.dims("ArrayDimensions")
		if n.NodeClass == ua.NodeClassVariable {
			n.AccessLevel = uint8(a.uint("AccessLevel", 1, 8))
			n.UserAccessLevel = uint8(a.uint("UserAccessLevel", 1, 8))
			n.MinimumSamplingInterval = a.float("MinimumSamplingInterval")
			n.Historizing = a.bool("Historizing", false)
		} else {
			n.IsAbstract = a.bool("IsAbstract", false)
		}
	case ua.NodeClassMethod:
		n.Executable = a.bool("Executable", true)
		n.UserExecutable = a.bool("UserExecutable", true)
		if m, ok := e.attr("MethodDeclarationId"); ok {
			n.MethodDeclarationId = a.nodeId(m)
		}
	case ua.NodeClassObjectType, ua.NodeClassDataType:
		n.IsAbstract = a.bool("IsAbstract", false)
	case ua.NodeClassReferenceType:
		n.IsAbstract = a.bool("IsAbstract", false)
		n.Symmetric = a.bool("Symmetric", false)
	}
	if a.err != nil {
		return a.err
	}
	for _, c := range e.Children {
		switch c.Name {
		case "DisplayName":
			if n.DisplayName.Text == "" {
				n.DisplayName = localized(c)
			}
		case "Description":
			if n.Description.Text == "" {
				n.Description = localized(c)
			}
		case "InverseName":
			if n.NodeClass == ua.NodeClassReferenceType && n.InverseName.Text == "" {
				n.InverseName = localized(c)
			}
		case "References":
			for _, r := range c.Children {
				rt, ok := r.attr("ReferenceType")
				if !ok {
					return f.errorf(r.Line, "Reference without ReferenceType")
				}
				typ, err := f.nodeId(rt, r.Line)
				if err != nil {
					return err
				}
				target, err := f.nodeId(r.Text, r.Line)
				if err != nil {
					return err
				}
				fwd := true
				if v, ok := r.attr("IsForward"); ok {
					if fwd, err = strconv.ParseBool(v); err != nil {
						return f.errorf(r.Line, "IsForward %q: not a boolean", v)
					}
				}
				n.References = append(n.References, Reference{ReferenceTypeId: typ, TargetId: target, IsForward: fwd})
			}
		}
	}
	if n.DisplayName.Text == "" || n.DisplayName.Text == n.BrowseName.Name {
		// Most files repeat the BrowseName; one string serves both.
		n.DisplayName.Text = n.BrowseName.Name
	}
	return nil
}

// localized reads a LocalizedText of the nodeset schema: text with a Locale attribute.
func localized(e *element) codec.LocalizedText {
	loc, _ := e.attr("Locale")
	return codec.LocalizedText{Locale: loc, Text: e.Text}
}

// attrs reads the XML attributes of a node; the first error sticks.
type attrs struct {
	f   *fileState
	e   *element
	err error
}

func (a *attrs) fail(name, v, what string) {
	if a.err == nil {
		a.err = a.f.errorf(a.e.Line, "%s=%q: %s", name, v, what)
	}
}

func (a *attrs) str(name, def string) string {
	if v, ok := a.e.attr(name); ok {
		return v
	}
	return def
}

func (a *attrs) uint(name string, def uint64, bits int) uint64 {
	v, ok := a.e.attr(name)
	if !ok {
		return def
	}
	x, err := strconv.ParseUint(strings.TrimSpace(v), 10, bits)
	if err != nil {
		a.fail(name, v, fmt.Sprintf("not an unsigned %d-bit integer", bits))
	}
	return x
}

func (a *attrs) int(name string, def int64) int64 {
	v, ok := a.e.attr(name)
	if !ok {
		return def
	}
	x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		a.fail(name, v, "not an Int32")
	}
	return x
}

func (a *attrs) float(name string) float64 {
	v, ok := a.e.attr(name)
	if !ok {
		return 0
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		a.fail(name, v, "not a number")
	}
	return x
}

func (a *attrs) bool(name string, def bool) bool {
	v, ok := a.e.attr(name)
	if !ok {
		return def
	}
	x, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		a.fail(name, v, "not a boolean")
	}
	return x
}

func (a *attrs) dims(name string) []uint32 {
	v, ok := a.e.attr(name)
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	var out []uint32
	for _, p := range strings.Split(v, ",") {
		x, err := strconv.ParseUint(strings.TrimSpace(p), 10, 32)
		if err != nil {
			a.fail(name, v, "not a list of UInt32")
			return nil
		}
		out = append(out, uint32(x))
	}
	return out
}

func (a *attrs) nodeId(s string) codec.NodeId {
	n, err := a.f.nodeId(s, a.e.Line)
	if err != nil && a.err == nil {
		a.err = err
	}
	return n
}

// learnTypes records the type system of nodes (supertypes, encodings, type names) and
// returns the ids it added, for forget.
func (f *fileState) learnTypes(nodes []Node) []codec.NodeId {
	hasSubtype := codec.NewNumericNodeId(0, id.HasSubtype)
	hasEncoding := codec.NewNumericNodeId(0, id.HasEncoding)
	var added []codec.NodeId
	for i := range nodes {
		n := &nodes[i]
		if n.NodeClass == ua.NodeClassObject || n.NodeClass == ua.NodeClassVariable || n.NodeClass == ua.NodeClassMethod {
			// Of the instances only the encodings' names are needed.
			if !strings.HasPrefix(n.BrowseName.Name, "Default ") {
				continue
			}
		}
		f.names[n.NodeId] = n.BrowseName.Name
		added = append(added, n.NodeId)
		for _, r := range n.References {
			switch {
			case r.ReferenceTypeId == hasSubtype && !r.IsForward:
				f.super[n.NodeId] = r.TargetId
			case r.ReferenceTypeId == hasSubtype && r.IsForward:
				f.super[r.TargetId] = n.NodeId
			case r.ReferenceTypeId == hasEncoding && r.IsForward:
				f.encodings[r.TargetId] = n.NodeId
			case r.ReferenceTypeId == hasEncoding && !r.IsForward:
				f.encodings[n.NodeId] = r.TargetId
			}
		}
	}
	// "Default Binary" encodings by DataType, once every node's BrowseName is known.
	for enc, dt := range f.encodings {
		if f.names[enc] == "Default Binary" {
			f.binary[dt] = enc
		}
	}
	return added
}

// forget takes out what learnTypes and definition added for a file that failed.
func (f *fileState) forget(ids []codec.NodeId) {
	for _, n := range ids {
		delete(f.names, n)
		delete(f.super, n)
		delete(f.encodings, n)
		delete(f.binary, n)
		delete(f.defs, n)
		delete(f.dynamic, n)
	}
}

// superType returns the supertype of the type t.
func (l *Loader) superType(t codec.NodeId) (codec.NodeId, bool) {
	if s, ok := l.super[t]; ok {
		return s, true
	}
	if t.Namespace() == 0 && t.Type() == codec.IDNumeric {
		if n, ok := ns0.Lookup(t.IntID()); ok {
			for _, r := range n.References() {
				if r.ReferenceTypeId == id.HasSubtype && !r.IsForward {
					return codec.NewNumericNodeId(0, r.TargetId), true
				}
			}
		}
	}
	return codec.NodeId{}, false
}

// isSubtype reports whether t is super or below it.
func (l *Loader) isSubtype(t, super codec.NodeId) bool {
	for range maxTypeDepth {
		if t == super {
			return true
		}
		var ok bool
		if t, ok = l.superType(t); !ok {
			return false
		}
	}
	return false
}

// nodeChunk is how many nodes Load reads into one chunk.
const nodeChunk = 4096

// maxTypeDepth bounds walks up the type tree against loops in a file.
const maxTypeDepth = 64

var errTypeLoop = errors.New("type hierarchy deeper than 64 or looping")
