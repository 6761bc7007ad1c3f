package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// xmlElem is one element of a parsed XML document: its local name (the
// namespace is dropped; the UANodeSet and the Types.xsd values never reuse a
// local name with another meaning), its attributes by local name, its
// character data (trimmed) and its child elements in document order.
type xmlElem struct {
	name  string
	attrs map[string]string
	text  string
	kids  []*xmlElem
}

// parseXMLTree reads a whole document into an xmlElem tree and returns the
// root element. Comments and processing instructions are skipped.
func parseXMLTree(r io.Reader) (*xmlElem, error) {
	d := xml.NewDecoder(r)
	var stack []*xmlElem
	var text []*strings.Builder
	var root *xmlElem
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			e := &xmlElem{name: t.Name.Local}
			if len(t.Attr) > 0 {
				e.attrs = make(map[string]string, len(t.Attr))
				for _, a := range t.Attr {
					if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
						continue
					}
					e.attrs[a.Name.Local] = a.Value
				}
			}
			if n := len(stack); n > 0 {
				stack[n-1].kids = append(stack[n-1].kids, e)
			} else if root == nil {
				root = e
			}
			stack = append(stack, e)
			text = append(text, new(strings.Builder))
		case xml.CharData:
			if n := len(stack); n > 0 {
				text[n-1].Write(t)
			}
		case xml.EndElement:
			n := len(stack)
			stack[n-1].text = strings.TrimSpace(text[n-1].String())
			stack, text = stack[:n-1], text[:n-1]
		}
	}
	if root == nil {
		return nil, fmt.Errorf("empty XML document")
	}
	return root, nil
}

// kid returns the first child element called name, or nil.
func (e *xmlElem) kid(name string) *xmlElem {
	if e == nil {
		return nil
	}
	for _, k := range e.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// attr returns the attribute called name and whether it is present.
func (e *xmlElem) attr(name string) (string, bool) {
	v, ok := e.attrs[name]
	return v, ok
}

// children returns e's child elements, or nil when e is nil.
func (e *xmlElem) children() []*xmlElem {
	if e == nil {
		return nil
	}
	return e.kids
}
