package main

// This file reads the OPC Binary type dictionary (Opc.Ua.Types.bsd, Part 3 Annex C /
// Part 6 §5.2) into the model the type generator emits from. The .bsd gives the wire
// layout; NodeIds.csv says which DataType and encoding ids exist; the NodeSet gives the
// base type of each OpaqueType and the specification link of each DataType.

import (
	"encoding/xml"
	"errors"
	"fmt"
	"go/token"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	bsdFile     = "Opc.Ua.Types.bsd"
	nodeSetFile = "Opc.Ua.NodeSet2.Services.xml"
	nodeIDsFile = "NodeIds.csv"

	binarySchemaNS = "http://opcfoundation.org/BinarySchema/"
	uaNS           = "http://opcfoundation.org/UA/"
)

// The .bsd as encoding/xml sees it.
type (
	bsdDictionary struct {
		TargetNamespace string          `xml:"TargetNamespace,attr"`
		Attrs           []xml.Attr      `xml:",any,attr"`
		Opaque          []bsdOpaque     `xml:"OpaqueType"`
		Enumerated      []bsdEnumerated `xml:"EnumeratedType"`
		Structured      []bsdStructured `xml:"StructuredType"`
	}
	bsdOpaque struct {
		Name         string `xml:"Name,attr"`
		LengthInBits string `xml:"LengthInBits,attr"`
		Doc          string `xml:"Documentation"`
	}
	bsdEnumerated struct {
		Name         string `xml:"Name,attr"`
		LengthInBits string `xml:"LengthInBits,attr"`
		IsOptionSet  string `xml:"IsOptionSet,attr"`
		Doc          string `xml:"Documentation"`
		Values       []struct {
			Name  string `xml:"Name,attr"`
			Value string `xml:"Value,attr"`
		} `xml:"EnumeratedValue"`
	}
	bsdStructured struct {
		Name     string     `xml:"Name,attr"`
		BaseType string     `xml:"BaseType,attr"`
		Doc      string     `xml:"Documentation"`
		Fields   []bsdField `xml:"Field"`
	}
	bsdField struct {
		Name          string `xml:"Name,attr"`
		TypeName      string `xml:"TypeName,attr"`
		Length        string `xml:"Length,attr"`
		LengthField   string `xml:"LengthField,attr"`
		SwitchField   string `xml:"SwitchField,attr"`
		SwitchValue   string `xml:"SwitchValue,attr"`
		SwitchOperand string `xml:"SwitchOperand,attr"`
	}
)

// builtin is an OPC UA built-in type (Part 6 §5.1.2) as the codec implements it. Its name
// is also the suffix of the codec methods: e.UInt32, d.UInt32, e.FieldUInt32.
type builtin struct {
	name   string
	goType string
	// minSize is the fewest bytes one value takes on the wire.
	minSize int
	// byRef: the codec reads and writes these through a pointer.
	byRef bool
}

// builtins are the built-in types a .bsd field may name, by OPC UA name. The codec
// implements them by hand, so the .bsd types of the same name are skipped.
var builtins = map[string]*builtin{}

func init() {
	for _, b := range []builtin{
		{"Boolean", "bool", 1, false},
		{"SByte", "int8", 1, false},
		{"Byte", "byte", 1, false},
		{"Int16", "int16", 2, false},
		{"UInt16", "uint16", 2, false},
		{"Int32", "int32", 4, false},
		{"UInt32", "uint32", 4, false},
		{"Int64", "int64", 8, false},
		{"UInt64", "uint64", 8, false},
		{"Float", "float32", 4, false},
		{"Double", "float64", 8, false},
		{"String", "string", 4, false},
		{"DateTime", "codec.DateTime", 8, false},
		{"Guid", "codec.Guid", 16, false},
		{"ByteString", "[]byte", 4, false},
		{"XmlElement", "string", 4, false},
		{"NodeId", "codec.NodeId", 2, false},
		{"ExpandedNodeId", "codec.ExpandedNodeId", 2, false},
		{"StatusCode", "status.Code", 4, false},
		{"QualifiedName", "codec.QualifiedName", 6, false},
		{"LocalizedText", "codec.LocalizedText", 1, false},
		{"ExtensionObject", "codec.ExtensionObject", 3, true},
		{"DataValue", "codec.DataValue", 1, true},
		{"Variant", "codec.Variant", 1, true},
		{"DiagnosticInfo", "codec.DiagnosticInfo", 1, true},
	} {
		builtins[b.name] = &b
	}
}

// binarySchemaTypes maps the opc: types of OPCBinarySchema.xsd that fields use to the
// built-ins. CharArray is the .bsd name of a String.
var binarySchemaTypes = map[string]string{
	"Boolean": "Boolean", "SByte": "SByte", "Byte": "Byte", "Int16": "Int16", "UInt16": "UInt16",
	"Int32": "Int32", "UInt32": "UInt32", "Int64": "Int64", "UInt64": "UInt64", "Float": "Float",
	"Double": "Double", "String": "String", "CharArray": "String", "DateTime": "DateTime",
	"Guid": "Guid", "ByteString": "ByteString",
}

// handWritten are the .bsd types the codec implements by hand: the built-ins and the
// helper types that only describe their encodings. The generator skips them.
var handWritten = map[string]bool{
	"XmlElement": true, "NodeIdType": true, "TwoByteNodeId": true, "FourByteNodeId": true,
	"NumericNodeId": true, "StringNodeId": true, "GuidNodeId": true, "ByteStringNodeId": true,
	"NodeId": true, "ExpandedNodeId": true, "StatusCode": true, "DiagnosticInfo": true,
	"QualifiedName": true, "LocalizedText": true, "DataValue": true, "ExtensionObject": true,
	"Variant": true,
	// Enumeration is the abstract supertype of all enumerations: it has no values and no
	// value of it can be encoded.
	"Enumeration": true,
}

// model is everything the type generator emits, in .bsd order.
type model struct {
	opaques []*opaqueType
	enums   []*enumType
	structs []*structType
	// skipped lists the .bsd types left to the hand-written codec, in .bsd order.
	skipped []string
}

// opaqueType is an OpaqueType resolved to the built-in it is a subtype of.
type opaqueType struct {
	name, doc, link string
	base            *builtin
	// baseName is the supertype that gave base: the built-in, or BaseDataType.
	baseName string
}

// enumType is an EnumeratedType. Option sets are bit masks of an unsigned integer.
type enumType struct {
	name, doc, link string
	optionSet       bool
	bits            int // 32 for enumerations; 8, 16, 32 or 64 for option sets
	values          []enumValue
}

type enumValue struct {
	name  string
	value int64
}

// codecName is the codec method suffix of the enum's wire type.
func (t *enumType) codecName() string {
	if !t.optionSet {
		return "Int32"
	}
	return map[int]string{8: "Byte", 16: "UInt16", 32: "UInt32", 64: "UInt64"}[t.bits]
}

// structKind says how a structure is laid out (Part 6 §5.2.6 to §5.2.8).
type structKind int

const (
	plainStruct    structKind = iota
	optionalStruct            // an EncodingMask and optional fields
	unionStruct               // a SwitchField and one selected field
)

// structType is a StructuredType.
type structType struct {
	name, doc, link string
	kind            structKind
	fields          []*field
	// maskBits is the width of the EncodingMask of an optionalStruct.
	maskBits int
	// switchName is the Go field holding a union's SwitchField.
	switchName string
	// ids says which of the DataType, binary, XML and JSON encoding ids NodeIds.csv has.
	hasID                      bool
	hasBinary, hasXML, hasJSON bool
	// recursive: the type can contain itself through arrays or optional fields, so
	// decoding it counts nesting depth.
	recursive bool
	minSize   int
}

// registered reports whether the type has an encoding id to register.
func (t *structType) registered() bool { return t.hasBinary || t.hasXML || t.hasJSON }

// field is one Go field of a structure: a .bsd field, or an array with its length field
// folded in.
type field struct {
	name  string
	typ   fieldType
	array bool
	// optional: the field is absent unless its mask bit is set; bit is that bit.
	optional bool
	bit      int
	// switchValue selects the field of a union.
	switchValue uint32
}

// fieldType is exactly one of a built-in, an enumeration or a structure.
type fieldType struct {
	builtin *builtin
	enum    *enumType
	st      *structType
}

// goType is the Go type of one value.
func (t fieldType) goType() string {
	switch {
	case t.builtin != nil:
		return t.builtin.goType
	case t.enum != nil:
		return t.enum.name
	}
	return t.st.name
}

// minSize is the fewest bytes one value takes on the wire.
func (t fieldType) minSize() int {
	switch {
	case t.builtin != nil:
		return t.builtin.minSize
	case t.enum != nil:
		return t.enum.bits / 8
	}
	return t.st.minSize
}

// goType is the Go type of the field: a slice for arrays, a pointer for optional scalars.
func (f *field) goType() string {
	switch {
	case f.array:
		return "[]" + f.typ.goType()
	case f.optional:
		return "*" + f.typ.goType()
	}
	return f.typ.goType()
}

// loadModel reads the schema files in schemaDir.
func loadModel(schemaDir string) (*model, error) {
	raw, err := os.ReadFile(filepath.Join(schemaDir, bsdFile))
	if err != nil {
		return nil, err
	}
	var dict bsdDictionary
	if err := xml.Unmarshal(raw, &dict); err != nil {
		return nil, fmt.Errorf("%s: %w", bsdFile, err)
	}
	ids, err := readNodeIDNames(schemaDir)
	if err != nil {
		return nil, err
	}
	dataTypes, err := readDataTypes(schemaDir)
	if err != nil {
		return nil, err
	}
	b := &modelBuilder{
		dict:      &dict,
		ids:       ids,
		dataTypes: dataTypes,
		prefixes:  map[string]string{},
		m:         &model{},
		opaques:   map[string]*opaqueType{},
		enums:     map[string]*enumType{},
		structs:   map[string]*structType{},
		bsd:       map[string]*bsdStructured{},
	}
	if err := b.build(); err != nil {
		return nil, fmt.Errorf("%s: %w", bsdFile, err)
	}
	return b.m, nil
}

// readNodeIDNames returns the SymbolicNames in NodeIds.csv.
func readNodeIDNames(schemaDir string) (map[string]bool, error) {
	rows, err := readCSV(schemaDir, nodeIDsFile, 3)
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(rows))
	for _, r := range rows {
		names[r[0]] = true
	}
	return names, nil
}

// nodeSetDataType is what the generator needs of a UADataType node.
type nodeSetDataType struct {
	NodeID     string `xml:"NodeId,attr"`
	BrowseName string `xml:"BrowseName,attr"`
	Doc        string `xml:"Documentation"`
	References []struct {
		Type      string `xml:"ReferenceType,attr"`
		IsForward string `xml:"IsForward,attr"`
		Target    string `xml:",chardata"`
	} `xml:"References>Reference"`
}

// dataTypeInfo is a DataType of the NodeSet: its supertype and specification link.
type dataTypeInfo struct {
	name, link string
	parent     string // NodeId of the supertype, "" for BaseDataType
}

// dataTypes indexes the NodeSet's DataTypes by NodeId and by BrowseName.
type dataTypes struct {
	byID, byName map[string]*dataTypeInfo
}

// readDataTypes reads the UADataType nodes of the NodeSet.
func readDataTypes(schemaDir string) (*dataTypes, error) {
	f, err := os.Open(filepath.Join(schemaDir, nodeSetFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dts := &dataTypes{byID: map[string]*dataTypeInfo{}, byName: map[string]*dataTypeInfo{}}
	dec := xml.NewDecoder(f)
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: %w", nodeSetFile, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "UADataType" {
			continue
		}
		var n nodeSetDataType
		if err := dec.DecodeElement(&n, &se); err != nil {
			return nil, fmt.Errorf("%s: %w", nodeSetFile, err)
		}
		dt := &dataTypeInfo{name: n.BrowseName, link: strings.TrimSpace(n.Doc)}
		if !strings.HasPrefix(dt.link, "https://") {
			dt.link = ""
		}
		for _, r := range n.References {
			if r.Type == "HasSubtype" && r.IsForward == "false" {
				dt.parent = strings.TrimSpace(r.Target)
			}
		}
		if dts.byName[n.BrowseName] != nil {
			return nil, fmt.Errorf("%s: DataType %q appears twice", nodeSetFile, n.BrowseName)
		}
		dts.byID[n.NodeID], dts.byName[n.BrowseName] = dt, dt
	}
	return dts, nil
}

// link returns the specification link of the named DataType, or "".
func (d *dataTypes) link(name string) string {
	if dt := d.byName[name]; dt != nil {
		return dt.link
	}
	return ""
}

// builtinBase follows the supertypes of the named DataType up to a built-in, and
// returns it with the name of the supertype it was found by.
func (d *dataTypes) builtinBase(name string) (*builtin, string, error) {
	dt := d.byName[name]
	for steps := 0; dt != nil && steps < 100; steps++ {
		if b := builtins[dt.name]; b != nil && dt.name != name {
			return b, dt.name, nil
		}
		if dt.name == "BaseDataType" {
			// A value of any type, which the encodings carry as a Variant (Part 6 §5.1.6).
			return builtins["Variant"], dt.name, nil
		}
		dt = d.byID[dt.parent]
	}
	return nil, "", fmt.Errorf("OpaqueType %s: no built-in supertype in %s", name, nodeSetFile)
}

// modelBuilder turns the parsed .bsd into a model.
type modelBuilder struct {
	dict      *bsdDictionary
	ids       map[string]bool
	dataTypes *dataTypes
	prefixes  map[string]string // namespace prefix -> URI
	m         *model
	opaques   map[string]*opaqueType
	enums     map[string]*enumType
	structs   map[string]*structType
	bsd       map[string]*bsdStructured
}

func (b *modelBuilder) build() error {
	for _, a := range b.dict.Attrs {
		if a.Name.Space == "xmlns" {
			b.prefixes[a.Name.Local] = a.Value
		}
	}
	if b.dict.TargetNamespace != uaNS {
		return fmt.Errorf("TargetNamespace %q: only namespace 0 (%s) is supported", b.dict.TargetNamespace, uaNS)
	}
	names := map[string]bool{}
	declare := func(name string) error {
		if names[name] {
			return fmt.Errorf("type %s is defined twice", name)
		}
		names[name] = true
		return checkExportedName(bsdFile, name)
	}
	for _, o := range b.dict.Opaque {
		if err := declare(o.Name); err != nil {
			return err
		}
		if handWritten[o.Name] {
			b.m.skipped = append(b.m.skipped, o.Name)
			continue
		}
		base, baseName, err := b.dataTypes.builtinBase(o.Name)
		if err != nil {
			return err
		}
		t := &opaqueType{name: o.Name, doc: cleanDoc(o.Doc), link: b.dataTypes.link(o.Name), base: base, baseName: baseName}
		b.opaques[o.Name] = t
		b.m.opaques = append(b.m.opaques, t)
	}
	for _, e := range b.dict.Enumerated {
		if err := declare(e.Name); err != nil {
			return err
		}
		if handWritten[e.Name] {
			b.m.skipped = append(b.m.skipped, e.Name)
			continue
		}
		t, err := b.enum(e)
		if err != nil {
			return err
		}
		b.enums[e.Name] = t
		b.m.enums = append(b.m.enums, t)
	}
	// Structures are declared first and filled in afterwards, as fields may name a
	// structure defined further down.
	for i := range b.dict.Structured {
		s := &b.dict.Structured[i]
		if err := declare(s.Name); err != nil {
			return err
		}
		if handWritten[s.Name] {
			b.m.skipped = append(b.m.skipped, s.Name)
			continue
		}
		t := &structType{
			name:      s.Name,
			doc:       cleanDoc(s.Doc),
			link:      b.dataTypes.link(s.Name),
			hasID:     b.ids[s.Name],
			hasBinary: b.ids[s.Name+"_Encoding_DefaultBinary"],
			hasXML:    b.ids[s.Name+"_Encoding_DefaultXml"],
			hasJSON:   b.ids[s.Name+"_Encoding_DefaultJson"],
		}
		b.structs[s.Name], b.bsd[s.Name] = t, s
		b.m.structs = append(b.m.structs, t)
	}
	for _, t := range b.m.structs {
		if err := b.fields(t, b.bsd[t.name]); err != nil {
			return fmt.Errorf("StructuredType %s: %w", t.name, err)
		}
	}
	for _, t := range b.m.structs {
		if _, err := b.sizeOf(t, map[*structType]bool{}); err != nil {
			return err
		}
		t.recursive = b.reaches(t, t, map[*structType]bool{})
	}
	return b.checkIdentifiers()
}

// cleanDoc joins the lines of a Documentation element.
func cleanDoc(s string) string { return strings.Join(strings.Fields(s), " ") }

func (b *modelBuilder) enum(e bsdEnumerated) (*enumType, error) {
	t := &enumType{name: e.Name, doc: cleanDoc(e.Doc), link: b.dataTypes.link(e.Name), optionSet: e.IsOptionSet == "true"}
	n, err := strconv.Atoi(e.LengthInBits)
	if err != nil {
		return nil, fmt.Errorf("EnumeratedType %s: LengthInBits %q: %w", e.Name, e.LengthInBits, err)
	}
	t.bits = n
	switch {
	case t.optionSet && (n == 8 || n == 16 || n == 32 || n == 64):
	case !t.optionSet && n == 32:
	default:
		return nil, fmt.Errorf("EnumeratedType %s: LengthInBits %d is not supported", e.Name, n)
	}
	if len(e.Values) == 0 {
		return nil, fmt.Errorf("EnumeratedType %s has no values", e.Name)
	}
	seen := map[int64]bool{}
	for _, v := range e.Values {
		x, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("EnumeratedType %s: value %s: %w", e.Name, v.Name, err)
		}
		lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
		if t.optionSet {
			lo, hi = 0, int64(uint64(1)<<n-1)
			if n == 64 {
				hi = math.MaxInt64
			}
		}
		if x < lo || x > hi {
			return nil, fmt.Errorf("EnumeratedType %s: value %s=%d does not fit %d bits", e.Name, v.Name, x, n)
		}
		if t.optionSet && bits.OnesCount64(uint64(x)) > 1 {
			return nil, fmt.Errorf("EnumeratedType %s: option %s=%d is not a single bit", e.Name, v.Name, x)
		}
		// A switch on the values must not have duplicate cases.
		if seen[x] {
			return nil, fmt.Errorf("EnumeratedType %s: value %d appears twice", e.Name, x)
		}
		seen[x] = true
		if !token.IsIdentifier(v.Name) {
			return nil, fmt.Errorf("EnumeratedType %s: value name %q is not a Go identifier", e.Name, v.Name)
		}
		t.values = append(t.values, enumValue{name: v.Name, value: x})
	}
	return t, nil
}

// resolve maps a field's TypeName to a built-in, enumeration or structure. OpaqueTypes
// resolve to their built-in base.
func (b *modelBuilder) resolve(typeName string) (fieldType, error) {
	prefix, local, ok := strings.Cut(typeName, ":")
	if !ok {
		return fieldType{}, fmt.Errorf("type %q has no namespace prefix", typeName)
	}
	switch b.prefixes[prefix] {
	case binarySchemaNS:
		if name, ok := binarySchemaTypes[local]; ok {
			return fieldType{builtin: builtins[name]}, nil
		}
	case uaNS:
		if bt := builtins[local]; bt != nil {
			return fieldType{builtin: bt}, nil
		}
		if o := b.opaques[local]; o != nil {
			return fieldType{builtin: o.base}, nil
		}
		if e := b.enums[local]; e != nil {
			return fieldType{enum: e}, nil
		}
		if s := b.structs[local]; s != nil {
			return fieldType{st: s}, nil
		}
	}
	return fieldType{}, fmt.Errorf("type %q is not supported", typeName)
}

// fields builds t's Go fields from the .bsd fields: length fields fold into their
// arrays, Bit fields into the EncodingMask, and a union's switch into its SwitchField.
func (b *modelBuilder) fields(t *structType, s *bsdStructured) error {
	byName := map[string]*bsdField{}
	lengthOf := map[string]bool{} // fields that are the length of an array
	for i := range s.Fields {
		f := &s.Fields[i]
		if byName[f.Name] != nil {
			return fmt.Errorf("field %s appears twice", f.Name)
		}
		byName[f.Name] = f
		if f.LengthField != "" {
			lengthOf[f.LengthField] = true
		}
	}
	bitOf, err := maskBits(t, s)
	if err != nil {
		return err
	}
	usedBits := map[string]bool{}
	for i := range s.Fields {
		f := &s.Fields[i]
		if lengthOf[f.Name] && f.TypeName != "opc:Int32" {
			return fmt.Errorf("length field %s is %s, not opc:Int32", f.Name, f.TypeName)
		}
		if f.TypeName == "opc:Bit" || lengthOf[f.Name] {
			continue
		}
		out, err := b.field(f, byName)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if f.SwitchField != "" {
			if err := switchField(t, out, f, byName[f.SwitchField], bitOf, usedBits); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
		t.fields = append(t.fields, out)
	}
	if t.kind == unionStruct {
		if err := checkUnion(t); err != nil {
			return err
		}
	}
	return checkFieldNames(t)
}

// maskBits assigns the bits of the EncodingMask to the Bit fields in declaration order
// from bit 0 (Part 6 §5.2.7) and marks t as a structure with optional fields if it has
// any.
func maskBits(t *structType, s *bsdStructured) (map[string]int, error) {
	bitOf := map[string]int{}
	nbits := 0
	seenData := false
	for _, f := range s.Fields {
		if f.TypeName != "opc:Bit" {
			seenData = true
			continue
		}
		if seenData {
			return nil, fmt.Errorf("bit field %s follows data fields; the EncodingMask must come first", f.Name)
		}
		n := 1
		if f.Length != "" {
			var err error
			if n, err = strconv.Atoi(f.Length); err != nil || n < 1 {
				return nil, fmt.Errorf("bit field %s: bad Length %q", f.Name, f.Length)
			}
		}
		bitOf[f.Name] = nbits
		nbits += n
	}
	switch nbits {
	case 0:
	case 32:
		// The EncodingMask is a UInt32.
		t.kind, t.maskBits = optionalStruct, nbits
	default:
		return nil, fmt.Errorf("the Bit fields take %d bits; an EncodingMask has 32", nbits)
	}
	return bitOf, nil
}

// field resolves one data field; an array takes its length field along.
func (b *modelBuilder) field(f *bsdField, byName map[string]*bsdField) (*field, error) {
	if err := checkExportedName(bsdFile, f.Name); err != nil {
		return nil, err
	}
	typ, err := b.resolve(f.TypeName)
	if err != nil {
		return nil, err
	}
	out := &field{name: f.Name, typ: typ, array: f.LengthField != ""}
	if out.array {
		lf := byName[f.LengthField]
		if lf == nil {
			return nil, fmt.Errorf("LengthField %s does not exist", f.LengthField)
		}
		if lf.SwitchField != f.SwitchField || lf.SwitchValue != f.SwitchValue {
			return nil, fmt.Errorf("its LengthField %s has another switch", f.LengthField)
		}
	}
	return out, nil
}

// switchField makes out optional (its SwitchField is a Bit) or an option of a union
// (its SwitchField is a UInt32 and it has a SwitchValue).
func switchField(t *structType, out *field, f, sw *bsdField, bitOf map[string]int, usedBits map[string]bool) error {
	if f.SwitchOperand != "" && f.SwitchOperand != "Equals" {
		return fmt.Errorf("SwitchOperand %s is not supported", f.SwitchOperand)
	}
	switch {
	case sw == nil:
		return fmt.Errorf("SwitchField %s does not exist", f.SwitchField)
	case sw.TypeName == "opc:Bit":
		if f.SwitchValue != "" || (sw.Length != "" && sw.Length != "1") {
			return fmt.Errorf("a switch on a multi-bit or valued Bit field is not supported")
		}
		if usedBits[sw.Name] {
			return fmt.Errorf("bit %s already switches another field", sw.Name)
		}
		usedBits[sw.Name] = true
		out.optional, out.bit = true, bitOf[sw.Name]
	case sw.TypeName == "opc:UInt32" && f.SwitchValue != "":
		v, err := strconv.ParseUint(f.SwitchValue, 10, 32)
		if err != nil || v == 0 {
			return fmt.Errorf("bad SwitchValue %q", f.SwitchValue)
		}
		if t.kind == optionalStruct || (t.switchName != "" && t.switchName != sw.Name) {
			return fmt.Errorf("only one switch per structure is supported")
		}
		t.kind, t.switchName, out.switchValue = unionStruct, sw.Name, uint32(v)
	default:
		return fmt.Errorf("SwitchField %s is neither a Bit nor a UInt32 with SwitchValue", f.SwitchField)
	}
	return nil
}

// checkUnion checks the layout of Part 6 §5.2.8: the UInt32 switch first, then the
// options, each with its own non-zero SwitchValue.
func checkUnion(t *structType) error {
	sw := t.fields[0]
	if sw.name != t.switchName || sw.typ.builtin == nil || sw.typ.builtin.name != "UInt32" || sw.array {
		return fmt.Errorf("union switch %s must be the first field, a UInt32", t.switchName)
	}
	seen := map[uint32]bool{}
	for _, f := range t.fields[1:] {
		if f.switchValue == 0 {
			return fmt.Errorf("union field %s has no SwitchValue", f.name)
		}
		if seen[f.switchValue] {
			return fmt.Errorf("union SwitchValue %d appears twice", f.switchValue)
		}
		seen[f.switchValue] = true
	}
	return nil
}

// checkFieldNames fails for a field name the generated code uses otherwise: a method,
// or a JSON key that a structure with optional fields or a union adds.
func checkFieldNames(t *structType) error {
	for _, f := range t.fields {
		switch f.name {
		case "EncodeBinary", "DecodeBinary", "EncodeJSON", "DecodeJSON", "TypeInfo":
			return fmt.Errorf("field %s clashes with a method", f.name)
		case "EncodingMask":
			if t.kind == optionalStruct {
				return fmt.Errorf("field %s clashes with the JSON EncodingMask", f.name)
			}
		case "SwitchField":
			if t.kind == unionStruct && f.name != t.switchName {
				return fmt.Errorf("field %s clashes with the JSON SwitchField", f.name)
			}
		}
	}
	return nil
}

// sizeOf computes t.minSize: the fewest bytes an encoded value takes. Absent optional
// fields and unselected union fields take none; every structure takes at least one
// byte, so that an array of them cannot be made from nothing.
func (b *modelBuilder) sizeOf(t *structType, visiting map[*structType]bool) (int, error) {
	if t.minSize > 0 {
		return t.minSize, nil
	}
	if visiting[t] {
		return 0, fmt.Errorf("StructuredType %s contains itself by value", t.name)
	}
	visiting[t] = true
	defer delete(visiting, t)
	size := t.maskBits / 8
	for _, f := range t.fields {
		switch {
		case f.optional || (t.kind == unionStruct && f.name != t.switchName):
		case f.array:
			size += 4
		case f.typ.st != nil:
			n, err := b.sizeOf(f.typ.st, visiting)
			if err != nil {
				return 0, err
			}
			size += n
		default:
			size += f.typ.minSize()
		}
	}
	t.minSize = max(size, 1)
	return t.minSize, nil
}

// reaches reports whether from can contain target, directly or through arrays and
// optional fields.
func (b *modelBuilder) reaches(from, target *structType, seen map[*structType]bool) bool {
	for _, f := range from.fields {
		s := f.typ.st
		if s == nil {
			continue
		}
		if s == target {
			return true
		}
		if !seen[s] {
			seen[s] = true
			if b.reaches(s, target, seen) {
				return true
			}
		}
	}
	return false
}

// checkIdentifiers fails if two generated package-level names would be the same.
func (b *modelBuilder) checkIdentifiers() error {
	seen := map[string]string{}
	add := func(name, what string) error {
		if prev, dup := seen[name]; dup {
			return fmt.Errorf("%s and %s are both named %s", prev, what, name)
		}
		seen[name] = what
		return nil
	}
	for _, o := range b.m.opaques {
		if err := add(o.name, "OpaqueType "+o.name); err != nil {
			return err
		}
	}
	for _, e := range b.m.enums {
		if err := add(e.name, "EnumeratedType "+e.name); err != nil {
			return err
		}
	}
	for _, s := range b.m.structs {
		if err := add(s.name, "StructuredType "+s.name); err != nil {
			return err
		}
		if err := add(typeInfoVar(s), "the TypeInfo of "+s.name); err != nil {
			return err
		}
	}
	for _, e := range b.m.enums {
		for _, v := range e.values {
			if err := add(e.name+v.name, "value "+v.name+" of "+e.name); err != nil {
				return err
			}
		}
		if !e.optionSet {
			if err := add(enumNamesFunc(e), "the name function of "+e.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// typeInfoVar names the package-level TypeInfo of t.
func typeInfoVar(t *structType) string { return "typeInfo" + t.name }

// enumNamesFunc names the function that gives the JSON symbol of an enumeration value.
func enumNamesFunc(t *enumType) string { return t.name + "Name" }
