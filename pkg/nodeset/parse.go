// Package nodeset reads UANodeSet XML files (Part 6 Annex F, UANodeSet.xsd) into plain
// node records for an address space: namespace indexes mapped to the server's
// NamespaceArray, required models checked, aliases resolved, values decoded from their
// XML encoding (Part 6 §5.3), and the structures a nodeset defines made encodable from
// their DataTypeDefinition (codec.DynamicType) without generated code.
//
// A Loader keeps what the files loaded so far defined (namespaces, models, types), so
// that a companion specification and the models built on it load one after the other.
// Errors name the file and line: "file.xml:123: ...".
package nodeset

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Error is a fault in a nodeset file, at a line.
type Error struct {
	File string
	Line int
	Err  error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrMissingModel is wrapped by the error for a RequiredModel that is not loaded.
var ErrMissingModel = errors.New("required model not loaded")

// element is one XML element kept as a tree: the nodes' children and values are read
// from it once the whole file (its aliases, its types) is known.
type element struct {
	Name     string // local name
	Attr     []xml.Attr
	Children []*element
	Text     string
	Line     int
}

// attr returns the attribute named name (local name) and whether it is there.
func (e *element) attr(name string) (string, bool) {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// child returns the first child named name, nil when there is none.
func (e *element) child(name string) *element {
	for _, c := range e.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// isNil reports xsi:nil="true".
func (e *element) isNil() bool {
	v, _ := e.attr("nil")
	return v == "true"
}

// Limits of one file, against a hostile or broken file: the XML decoder reads a token at
// a time, and these bound what is kept of it.
const (
	maxDepth       = 64      // element nesting within a node
	maxChildren    = 1 << 20 // children of one element
	maxTextLength  = 16 << 20
	maxElementsAll = 1 << 26 // elements kept for one file
)

// document is a file's tables, read before its nodes (UANodeSet.xsd orders them so).
type document struct {
	file       string
	namespaces []string
	models     []*element
	aliases    map[string]string
}

// nodeElements are the element names of the node classes.
var nodeElements = map[string]bool{"UAObject": true, "UAVariable": true, "UAMethod": true, "UAView": true,
	"UAObjectType": true, "UAVariableType": true, "UADataType": true, "UAReferenceType": true}

// parse reads a UANodeSet document into doc and hands each node element to node as it
// is read, so that the elements of the whole file are never held at once.
func parse(r io.Reader, doc *document, node func(*element) error) error {
	file := doc.file
	dec := xml.NewDecoder(r)
	dec.Strict = true
	fail := func(line int, format string, args ...any) error {
		return &Error{File: file, Line: line, Err: fmt.Errorf(format, args...)}
	}
	line := func() int { l, _ := dec.InputPos(); return l }
	seenRoot, rootDone := false, false
	budget := maxElementsAll
	for {
		// RawToken: namespace prefixes are not translated (names are matched by their
		// local part) and readElement checks that end tags match, which saves a third
		// of the tokenizer's time over Token.
		tok, err := dec.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return xmlError(file, err, line())
		}
		if end, ok := tok.(xml.EndElement); ok {
			if !seenRoot || rootDone || end.Name.Local != "UANodeSet" {
				return fail(line(), "unexpected </%s>", qname(end.Name))
			}
			rootDone = true
			continue
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if rootDone {
			return fail(line(), "element <%s> after </UANodeSet>", qname(se.Name))
		}
		if !seenRoot {
			if se.Name.Local != "UANodeSet" {
				return fail(line(), "root element is %s, not UANodeSet", se.Name.Local)
			}
			seenRoot = true
			continue
		}
		e, err := readElement(dec, se, line(), 0, &budget)
		if err != nil {
			return xmlError(file, err, line())
		}
		switch {
		case e.Name == "NamespaceUris":
			for _, c := range e.Children {
				doc.namespaces = append(doc.namespaces, strings.TrimSpace(c.Text))
			}
		case e.Name == "Models":
			doc.models = append(doc.models, e.Children...)
		case e.Name == "Aliases":
			for _, c := range e.Children {
				a, ok := c.attr("Alias")
				if !ok {
					return fail(c.Line, "Alias without its Alias attribute")
				}
				doc.aliases[a] = strings.TrimSpace(c.Text)
			}
		case nodeElements[e.Name]:
			if err := node(e); err != nil {
				return err
			}
		case e.Name == "ServerUris", e.Name == "Extensions", e.Name == "LastModified":
		default:
			return fail(e.Line, "unknown element %s in UANodeSet", e.Name)
		}
	}
	if !seenRoot || !rootDone {
		return fail(line(), "no complete UANodeSet element")
	}
	return nil
}

// xmlError turns an error of the XML decoder into an Error at its line.
func xmlError(file string, err error, line int) error {
	var e *Error
	if errors.As(err, &e) {
		if e.File == "" {
			e.File = file
		}
		return e
	}
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return &Error{File: file, Line: se.Line, Err: errors.New(se.Msg)}
	}
	return &Error{File: file, Line: line, Err: err}
}

// readElement reads the element se started, with its children, up to its end.
func readElement(dec *xml.Decoder, se xml.StartElement, line, depth int, budget *int) (*element, error) {
	if depth > maxDepth {
		return nil, &Error{Line: line, Err: fmt.Errorf("elements nested deeper than %d", maxDepth)}
	}
	*budget--
	if *budget < 0 {
		return nil, &Error{Line: line, Err: fmt.Errorf("more than %d elements", maxElementsAll)}
	}
	e := &element{Name: se.Name.Local, Attr: se.Attr, Line: line}
	var text strings.Builder
	for {
		tok, err := dec.RawToken()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			l, _ := dec.InputPos()
			c, err := readElement(dec, t, l, depth+1, budget)
			if err != nil {
				return nil, err
			}
			if len(e.Children) >= maxChildren {
				return nil, &Error{Line: l, Err: fmt.Errorf("more than %d children in %s", maxChildren, e.Name)}
			}
			e.Children = append(e.Children, c)
		case xml.CharData:
			if text.Len()+len(t) > maxTextLength {
				return nil, &Error{Line: line, Err: fmt.Errorf("text of %s longer than %d bytes", e.Name, maxTextLength)}
			}
			text.Write(t)
		case xml.EndElement:
			if t.Name != se.Name {
				l, _ := dec.InputPos()
				return nil, &Error{Line: l, Err: fmt.Errorf("element <%s> closed by </%s>", qname(se.Name), qname(t.Name))}
			}
			e.Text = text.String()
			return e, nil
		}
	}
}

// qname writes a name as it stands in the file.
func qname(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}
