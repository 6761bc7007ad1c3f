package main

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
)

func init() { steps = append(steps, genNodeSet) }

// ns0NodeSetFile is the namespace-0 nodeset that ua/ns0 is generated from.
const ns0NodeSetFile = "Opc.Ua.NodeSet2.xml"

// Node ids the generator needs to know to build DataTypeDefinitions.
const (
	idStructure   = 22
	idHasSubtype  = 45
	idHasEncoding = 38
)

// nsNode is one node of the nodeset, with every attribute resolved to numbers
// and string table indexes.
type nsNode struct {
	id          uint32
	class       ua.NodeClass
	browseName  string
	displayName codec.LocalizedText
	description codec.LocalizedText
	symbolic    string
	inverseName codec.LocalizedText

	dataType        uint32
	valueRank       int32
	arrayDims       []uint32
	accessLevel     uint8
	userAccessLevel uint8
	minSampling     float64
	historizing     bool
	eventNotifier   uint8
	executable      bool
	userExecutable  bool
	isAbstract      bool
	symmetric       bool
	accessRestr     uint16

	value     string // binary Variant, "" for none
	valueErr  string // why the XML value could not be converted
	defn      string // binary Variant of the DataTypeDefinition
	rolePerms string // binary Variant of the RolePermissions

	refs []nsRef
	xml  *xmlElem
}

type nsRef struct {
	typ     uint32
	target  uint32
	forward bool
}

// nodeSetModel is the parsed nodeset.
type nodeSetModel struct {
	aliases map[string]string
	nodes   []*nsNode // sorted by id
	byID    map[uint32]*nsNode
}

// parseNumericID parses "i=123", resolving an alias first. Any other form
// (ns=, s=, g=, b=) is an error: namespace 0 uses numeric ids only.
func (m *nodeSetModel) parseNumericID(s string) (uint32, error) {
	if a, ok := m.aliases[s]; ok {
		s = a
	}
	n, ok := strings.CutPrefix(s, "i=")
	if !ok {
		return 0, fmt.Errorf("node id %q is not a numeric namespace-0 id", s)
	}
	v, err := strconv.ParseUint(n, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("node id %q: %w", s, err)
	}
	return uint32(v), nil
}

var nodeClassOf = map[string]ua.NodeClass{
	"UAObject":        ua.NodeClassObject,
	"UAVariable":      ua.NodeClassVariable,
	"UAMethod":        ua.NodeClassMethod,
	"UAObjectType":    ua.NodeClassObjectType,
	"UAVariableType":  ua.NodeClassVariableType,
	"UAReferenceType": ua.NodeClassReferenceType,
	"UADataType":      ua.NodeClassDataType,
	"UAView":          ua.NodeClassView,
}

func loadNodeSet(path string) (*nodeSetModel, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	root, err := parseXMLTree(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	m, err := buildNodeSetModel(root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return m, nil
}

// buildNodeSetModel resolves the nodes of a parsed UANodeSet document, completes
// the references in both directions and builds the DataTypeDefinitions.
func buildNodeSetModel(root *xmlElem) (*nodeSetModel, error) {
	if root.name != "UANodeSet" {
		return nil, fmt.Errorf("root element is <%s>", root.name)
	}
	if uris := root.kid("NamespaceUris"); uris != nil && len(uris.kids) > 0 {
		return nil, fmt.Errorf("NamespaceUris present; only namespace 0 is supported")
	}
	m := &nodeSetModel{aliases: map[string]string{}, byID: map[uint32]*nsNode{}}
	if a := root.kid("Aliases"); a != nil {
		for _, a := range a.kids {
			m.aliases[a.attrs["Alias"]] = a.text
		}
	}
	for _, e := range root.kids {
		class, ok := nodeClassOf[e.name]
		if !ok {
			continue
		}
		n, err := m.parseNode(e, class)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", e.name, e.attrs["NodeId"], err)
		}
		if m.byID[n.id] != nil {
			return nil, fmt.Errorf("duplicate node i=%d", n.id)
		}
		m.byID[n.id] = n
		m.nodes = append(m.nodes, n)
	}
	slices.SortFunc(m.nodes, func(a, b *nsNode) int { return cmp.Compare(a.id, b.id) })
	if err := m.completeReferences(); err != nil {
		return nil, err
	}
	for _, n := range m.nodes {
		if n.class == ua.NodeClassDataType {
			if err := m.buildDefinition(n); err != nil {
				return nil, fmt.Errorf("DataType i=%d: %w", n.id, err)
			}
		}
	}
	return m, nil
}

func localizedAttr(e *xmlElem) codec.LocalizedText {
	if e == nil {
		return codec.LocalizedText{}
	}
	return codec.LocalizedText{Locale: e.attrs["Locale"], Text: e.text}
}

func (m *nodeSetModel) parseNode(e *xmlElem, class ua.NodeClass) (*nsNode, error) {
	id, err := m.parseNumericID(e.attrs["NodeId"])
	if err != nil {
		return nil, err
	}
	n := &nsNode{id: id, class: class, xml: e}
	bn := e.attrs["BrowseName"]
	if prefix, name, ok := strings.Cut(bn, ":"); ok {
		if _, err := strconv.ParseUint(prefix, 10, 16); err == nil {
			if prefix != "0" {
				return nil, fmt.Errorf("BrowseName %q is outside namespace 0", bn)
			}
			bn = name
		}
	}
	n.browseName = bn
	n.displayName = localizedAttr(e.kid("DisplayName"))
	n.description = localizedAttr(e.kid("Description"))
	n.inverseName = localizedAttr(e.kid("InverseName"))
	n.symbolic = e.attrs["SymbolicName"]

	boolAttr := func(name string, def bool) (bool, error) {
		s, ok := e.attr(name)
		if !ok {
			return def, nil
		}
		return strconv.ParseBool(s)
	}
	uintAttr := func(name string, bits int, def uint64) (uint64, error) {
		s, ok := e.attr(name)
		if !ok {
			return def, nil
		}
		return strconv.ParseUint(s, 10, bits)
	}
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var u uint64
	u, err = uintAttr("AccessRestrictions", 16, 0)
	check(err)
	n.accessRestr = uint16(u)

	switch class {
	case ua.NodeClassVariable, ua.NodeClassVariableType:
		dt := "i=24" // BaseDataType
		if s, ok := e.attr("DataType"); ok {
			dt = s
		}
		n.dataType, err = m.parseNumericID(dt)
		check(err)
		n.valueRank = -1 // Scalar
		if s, ok := e.attr("ValueRank"); ok {
			v, err := strconv.ParseInt(s, 10, 32)
			check(err)
			n.valueRank = int32(v)
		}
		if s, ok := e.attr("ArrayDimensions"); ok && s != "" {
			for d := range strings.SplitSeq(s, ",") {
				v, err := strconv.ParseUint(strings.TrimSpace(d), 10, 32)
				check(err)
				n.arrayDims = append(n.arrayDims, uint32(v))
			}
		}
		if class == ua.NodeClassVariable {
			u, err = uintAttr("AccessLevel", 8, 1) // CurrentRead
			check(err)
			n.accessLevel = uint8(u)
			u, err = uintAttr("UserAccessLevel", 8, uint64(n.accessLevel))
			check(err)
			n.userAccessLevel = uint8(u)
			if s, ok := e.attr("MinimumSamplingInterval"); ok {
				n.minSampling, err = strconv.ParseFloat(s, 64)
				check(err)
			}
			n.historizing, err = boolAttr("Historizing", false)
			check(err)
		} else {
			n.isAbstract, err = boolAttr("IsAbstract", false)
			check(err)
		}
		if v := e.kid("Value"); v != nil {
			if len(v.kids) != 1 {
				n.valueErr = fmt.Sprintf("<Value> has %d elements", len(v.kids))
			} else if vv, err := xmlToVariant(v.kids[0]); err != nil {
				n.valueErr = err.Error()
			} else if n.value, err = encodeVariant(vv); err != nil {
				n.valueErr = err.Error()
			}
		}
	case ua.NodeClassObject:
		u, err = uintAttr("EventNotifier", 8, 0)
		check(err)
		n.eventNotifier = uint8(u)
	case ua.NodeClassView:
		u, err = uintAttr("EventNotifier", 8, 0)
		check(err)
		n.eventNotifier = uint8(u)
	case ua.NodeClassMethod:
		n.executable, err = boolAttr("Executable", true)
		check(err)
		n.userExecutable, err = boolAttr("UserExecutable", n.executable)
		check(err)
	case ua.NodeClassObjectType, ua.NodeClassDataType:
		n.isAbstract, err = boolAttr("IsAbstract", false)
		check(err)
	case ua.NodeClassReferenceType:
		n.isAbstract, err = boolAttr("IsAbstract", false)
		check(err)
		n.symmetric, err = boolAttr("Symmetric", false)
		check(err)
	}

	if rp := e.kid("RolePermissions"); rp != nil && len(rp.kids) > 0 {
		perms := make([]codec.ExtensionObject, 0, len(rp.kids))
		for _, k := range rp.kids {
			role, err := m.parseNumericID(k.text)
			check(err)
			p, err := strconv.ParseUint(k.attrs["Permissions"], 10, 32)
			check(err)
			perms = append(perms, codec.NewExtensionObject(&ua.RolePermissionType{
				RoleId:      codec.NewNumericNodeId(0, role),
				Permissions: ua.PermissionType(p),
			}))
		}
		n.rolePerms, err = encodeVariant(codec.MustVariant(perms))
		check(err)
	}

	for _, r := range e.kid("References").children() {
		typ, err := m.parseNumericID(r.attrs["ReferenceType"])
		check(err)
		target, err := m.parseNumericID(r.text)
		check(err)
		fwd := true
		if s, ok := r.attr("IsForward"); ok {
			fwd, err = strconv.ParseBool(s)
			check(err)
		}
		n.refs = append(n.refs, nsRef{typ: typ, target: target, forward: fwd})
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return n, nil
}

// completeReferences drops duplicate references and adds every missing
// inverse, so each reference can be browsed from both of its ends (Part 3
// §5.3.1: a server exposes the inverse of a non-symmetric reference).
func (m *nodeSetModel) completeReferences() error {
	type key struct {
		src uint32
		ref nsRef
	}
	seen := map[key]bool{}
	for _, n := range m.nodes {
		kept := n.refs[:0]
		for _, r := range n.refs {
			if m.byID[r.target] == nil {
				return fmt.Errorf("i=%d: reference target i=%d is not in the nodeset", n.id, r.target)
			}
			if m.byID[r.typ] == nil || m.byID[r.typ].class != ua.NodeClassReferenceType {
				return fmt.Errorf("i=%d: reference type i=%d is not a ReferenceType of the nodeset", n.id, r.typ)
			}
			k := key{n.id, r}
			if !seen[k] {
				seen[k] = true
				kept = append(kept, r)
			}
		}
		n.refs = kept
	}
	for _, n := range m.nodes {
		for _, r := range n.refs {
			inv := nsRef{typ: r.typ, target: n.id, forward: !r.forward}
			k := key{r.target, inv}
			if !seen[k] {
				seen[k] = true
				t := m.byID[r.target]
				t.refs = append(t.refs, inv)
			}
		}
	}
	return nil
}

// parent returns the supertype of a type node (its inverse HasSubtype), or 0.
func (m *nodeSetModel) parent(n *nsNode) uint32 {
	for _, r := range n.refs {
		if r.typ == idHasSubtype && !r.forward {
			return r.target
		}
	}
	return 0
}

// isSubtypeOf reports whether n is base or one of its subtypes.
func (m *nodeSetModel) isSubtypeOf(n *nsNode, base uint32) bool {
	for depth := 0; n != nil && depth < 100; depth++ {
		if n.id == base {
			return true
		}
		n = m.byID[m.parent(n)]
	}
	return false
}

// buildDefinition converts a DataType's <Definition> to a StructureDefinition
// (for subtypes of Structure) or an EnumDefinition (Enumerations and OptionSets)
// as the DataTypeDefinition attribute holds it (Part 3 §5.8.3, Part 5 §12.2.12).
func (m *nodeSetModel) buildDefinition(n *nsNode) error {
	d := n.xml.kid("Definition")
	if d == nil {
		return nil
	}
	var def codec.Structure
	if m.isSubtypeOf(n, idStructure) {
		sd := &ua.StructureDefinition{BaseDataType: codec.NewNumericNodeId(0, m.parent(n))}
		for _, r := range n.refs {
			if t := m.byID[r.target]; r.typ == idHasEncoding && r.forward && t.browseName == "Default Binary" {
				sd.DefaultEncodingId = codec.NewNumericNodeId(0, t.id)
			}
		}
		isUnion := d.attrs["IsUnion"] == "true"
		var optional, subtyped bool
		sd.Fields = []ua.StructureField{}
		for _, f := range d.kids {
			if f.name != "Field" {
				continue
			}
			dt, err := m.parseNumericID(cmp.Or(f.attrs["DataType"], "i=24"))
			if err != nil {
				return err
			}
			sf := ua.StructureField{
				Name:        f.attrs["Name"],
				Description: localizedAttr(f.kid("Description")),
				DataType:    codec.NewNumericNodeId(0, dt),
				ValueRank:   -1,
				IsOptional:  f.attrs["IsOptional"] == "true",
			}
			if s, ok := f.attr("ValueRank"); ok {
				v, err := strconv.ParseInt(s, 10, 32)
				if err != nil {
					return err
				}
				sf.ValueRank = int32(v)
			}
			if s, ok := f.attr("ArrayDimensions"); ok && s != "" {
				for x := range strings.SplitSeq(s, ",") {
					v, err := strconv.ParseUint(strings.TrimSpace(x), 10, 32)
					if err != nil {
						return err
					}
					sf.ArrayDimensions = append(sf.ArrayDimensions, uint32(v))
				}
			}
			if s, ok := f.attr("MaxStringLength"); ok {
				v, err := strconv.ParseUint(s, 10, 32)
				if err != nil {
					return err
				}
				sf.MaxStringLength = uint32(v)
			}
			optional = optional || sf.IsOptional
			subtyped = subtyped || f.attrs["AllowSubTypes"] == "true"
			sd.Fields = append(sd.Fields, sf)
		}
		switch {
		case isUnion && subtyped:
			sd.StructureType = ua.StructureTypeUnionWithSubtypedValues
		case isUnion:
			sd.StructureType = ua.StructureTypeUnion
		case subtyped:
			sd.StructureType = ua.StructureTypeStructureWithSubtypedValues
		case optional:
			sd.StructureType = ua.StructureTypeStructureWithOptionalFields
		}
		def = sd
	} else {
		ed := &ua.EnumDefinition{Fields: []ua.EnumField{}}
		for _, f := range d.kids {
			if f.name != "Field" {
				continue
			}
			v, err := strconv.ParseInt(cmp.Or(f.attrs["Value"], "0"), 10, 64)
			if err != nil {
				return err
			}
			dn := localizedAttr(f.kid("DisplayName"))
			if dn.Text == "" {
				dn.Text = f.attrs["Name"]
			}
			ed.Fields = append(ed.Fields, ua.EnumField{
				Value:       v,
				DisplayName: dn,
				Description: localizedAttr(f.kid("Description")),
				Name:        f.attrs["Name"],
			})
		}
		def = ed
	}
	var err error
	n.defn, err = encodeVariant(codec.MustVariant(def))
	return err
}

// nodeSetTables interns strings, value blobs and array dimensions.
type nodeSetTables struct {
	strs    []string
	strIdx  map[string]int
	blobs   []string
	blobIdx map[string]int
	dims    []uint32
	dimsIdx map[string]int
}

func newNodeSetTables() *nodeSetTables {
	return &nodeSetTables{
		strs: []string{""}, strIdx: map[string]int{"": 0},
		blobs: []string{""}, blobIdx: map[string]int{"": 0},
		dimsIdx: map[string]int{},
	}
}

func (t *nodeSetTables) str(s string) int {
	if i, ok := t.strIdx[s]; ok {
		return i
	}
	t.strIdx[s] = len(t.strs)
	t.strs = append(t.strs, s)
	return len(t.strs) - 1
}

func (t *nodeSetTables) blob(s string) int {
	if i, ok := t.blobIdx[s]; ok {
		return i
	}
	t.blobIdx[s] = len(t.blobs)
	t.blobs = append(t.blobs, s)
	return len(t.blobs) - 1
}

func (t *nodeSetTables) dim(d []uint32) int {
	if len(d) == 0 {
		return 0
	}
	k := fmt.Sprint(d)
	if i, ok := t.dimsIdx[k]; ok {
		return i
	}
	t.dimsIdx[k] = len(t.dims)
	t.dims = append(t.dims, d...)
	return len(t.dims) - len(d)
}

// Flag bits of the generated record; keep in step with pkg/ua/ns0/ns0.go.
const (
	flagHistorizing = 1 << iota
	flagExecutable
	flagUserExecutable
	flagIsAbstract
	flagSymmetric
)

// genNodeSet writes ua/ns0/nodes_gen.go: the namespace-0 address space as
// static tables, sorted by node id, that the hand-written ua/ns0/ns0.go reads.
func genNodeSet(schemaDir, outDir string) error {
	m, err := loadNodeSet(filepath.Join(schemaDir, ns0NodeSetFile))
	if err != nil {
		return err
	}
	t := newNodeSetTables()
	var b bytes.Buffer
	b.WriteString("package ns0\n\n")

	refCount := 0
	var unconverted []*nsNode
	for _, n := range m.nodes {
		refCount += len(n.refs)
		if n.valueErr != "" {
			unconverted = append(unconverted, n)
		}
	}
	fmt.Fprintf(&b, "// nodeCount is the number of nodes in %s.\n", ns0NodeSetFile)
	fmt.Fprintf(&b, "const nodeCount = %d\n\n", len(m.nodes))
	b.WriteString("// unconvertedValues lists the nodes whose XML <Value> has no binary form here, with\n")
	b.WriteString("// the reason; they read as having no value.\n")
	b.WriteString("var unconvertedValues = [...]uint32{\n")
	for _, n := range unconverted {
		fmt.Fprintf(&b, "%d, // %s\n", n.id, strings.ReplaceAll(n.valueErr, "\n", " "))
	}
	b.WriteString("}\n\n")

	var recs bytes.Buffer
	var refs bytes.Buffer
	refAt := 0
	for _, n := range m.nodes {
		var flags int
		for _, f := range []struct {
			on  bool
			bit int
		}{{n.historizing, flagHistorizing}, {n.executable, flagExecutable}, {n.userExecutable, flagUserExecutable},
			{n.isAbstract, flagIsAbstract}, {n.symmetric, flagSymmetric}} {
			if f.on {
				flags |= f.bit
			}
		}
		if n.minSampling != 0 && (n.minSampling != math.Trunc(n.minSampling) || n.minSampling > math.MaxInt32 || n.minSampling < -1) {
			return fmt.Errorf("i=%d: MinimumSamplingInterval %v is not a whole number of ms", n.id, n.minSampling)
		}
		fields := []int64{
			int64(n.id), int64(n.class), int64(flags), int64(n.accessLevel), int64(n.userAccessLevel),
			int64(n.eventNotifier), int64(len(n.arrayDims)), int64(n.accessRestr),
			int64(t.str(n.browseName)), int64(t.str(n.displayName.Locale)), int64(t.str(n.displayName.Text)),
			int64(t.str(n.description.Locale)), int64(t.str(n.description.Text)), int64(t.str(n.symbolic)),
			int64(t.str(n.inverseName.Locale)), int64(t.str(n.inverseName.Text)),
			int64(n.dataType), int64(n.valueRank), int64(n.minSampling), int64(t.dim(n.arrayDims)),
			int64(t.blob(n.value)), int64(t.blob(n.defn)), int64(t.blob(n.rolePerms)), int64(refAt),
		}
		recs.WriteByte('{')
		for i, f := range fields {
			if i > 0 {
				recs.WriteString(", ")
			}
			recs.WriteString(strconv.FormatInt(f, 10))
		}
		recs.WriteString("},\n")
		for _, r := range n.refs {
			fmt.Fprintf(&refs, "{%d, %d, %t},\n", r.typ, r.target, r.forward)
		}
		refAt += len(n.refs)
	}
	if len(t.strs) > math.MaxUint16 || len(t.blobs) > math.MaxUint16 || len(t.dims) > math.MaxUint16 {
		return fmt.Errorf("%s: tables too large for the uint16 indexes: %d strings, %d values, %d dimensions",
			ns0NodeSetFile, len(t.strs), len(t.blobs), len(t.dims))
	}

	b.WriteString("// nodes holds one record per node, sorted by id. Fields, in order: id, class, flags,\n")
	b.WriteString("// accessLevel, userAccessLevel, eventNotifier, dimsLen, accessRestr, browseName,\n")
	b.WriteString("// displayLocale, displayText, descLocale, descText, symbolicName, inverseLocale,\n")
	b.WriteString("// inverseText, dataType, valueRank, minSampling, dims, value, definition,\n")
	b.WriteString("// rolePermissions, refs.\n")
	b.WriteString("var nodes = [nodeCount]record{\n")
	b.Write(recs.Bytes())
	b.WriteString("}\n\n")
	fmt.Fprintf(&b, "// refs holds the references of every node (%d, each in both directions), node by node;\n", refCount)
	b.WriteString("// record.refs is where a node's run starts.\n")
	fmt.Fprintf(&b, "var refs = [%d]Reference{\n", refCount)
	b.Write(refs.Bytes())
	b.WriteString("}\n\n")
	b.WriteString("// strs is the string table; index 0 is the null string.\n")
	b.WriteString("var strs = [...]string{\n")
	for _, s := range t.strs {
		b.WriteString(strconv.Quote(s))
		b.WriteString(",\n")
	}
	b.WriteString("}\n\n")
	b.WriteString("// blobs holds binary-encoded Variants (values, DataTypeDefinitions, RolePermissions);\n")
	b.WriteString("// index 0 means none.\n")
	b.WriteString("var blobs = [...]string{\n")
	for _, s := range t.blobs {
		b.WriteString(quoteBinary(s))
		b.WriteString(",\n")
	}
	b.WriteString("}\n\n")
	b.WriteString("// dims holds the ArrayDimensions of all nodes; a record has its start and length.\n")
	b.WriteString("var dims = [...]uint32{")
	for i, d := range t.dims {
		if i%16 == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%d, ", d)
	}
	b.WriteString("\n}\n")

	return writeGoFile(outDir, "ua/ns0/nodes_gen.go", ns0NodeSetFile, b.Bytes())
}

// quoteBinary writes s as a Go string literal: printable ASCII as is, every
// other byte as \xNN, so arbitrary binary stays valid source.
func quoteBinary(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	b.WriteByte('"')
	return b.String()
}
