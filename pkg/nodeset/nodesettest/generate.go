// Package nodesettest writes UANodeSet documents of any size for benchmarks and tests.
package nodesettest

import (
	"bufio"
	"fmt"
	"io"
)

// URI is the namespace of the generated model.
const URI = "urn:uastack:bench:generated"

// Generate writes a UANodeSet of about n nodes in namespace URI: a folder below the
// Objects folder, Objects of a generated ObjectType below it, and four Variables per
// Object (a writable Double, an Int32, a String and an array of Doubles) with values.
// References between the model's nodes are written at both ends, as modelling tools
// write them.
func Generate(w io.Writer, n int) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p(`<?xml version="1.0" encoding="utf-8"?>
<UANodeSet xmlns="http://opcfoundation.org/UA/2011/03/UANodeSet.xsd">
  <NamespaceUris><Uri>%s</Uri></NamespaceUris>
  <Models><Model ModelUri="%s" Version="1.0.0"><RequiredModel ModelUri="http://opcfoundation.org/UA/" Version="1.04" /></Model></Models>
  <Aliases>
    <Alias Alias="Double">i=11</Alias><Alias Alias="Int32">i=6</Alias><Alias Alias="String">i=12</Alias>
    <Alias Alias="Organizes">i=35</Alias><Alias Alias="HasComponent">i=47</Alias>
    <Alias Alias="HasTypeDefinition">i=40</Alias><Alias Alias="HasSubtype">i=45</Alias>
  </Aliases>
  <UAObjectType NodeId="ns=1;i=1" BrowseName="1:MachineType"><DisplayName>MachineType</DisplayName>
    <References><Reference ReferenceType="HasSubtype" IsForward="false">i=58</Reference></References></UAObjectType>
  <UAObject NodeId="ns=1;i=2" BrowseName="1:Machines"><DisplayName>Machines</DisplayName>
    <References><Reference ReferenceType="Organizes" IsForward="false">i=85</Reference>
      <Reference ReferenceType="HasTypeDefinition">i=61</Reference></References></UAObject>
`, URI, URI)
	const perObject = 5
	id := 100
	for made := 3; made < n; made += perObject {
		obj := id
		p(`  <UAObject NodeId="ns=1;i=%d" BrowseName="1:Machine%d"><DisplayName>Machine%d</DisplayName>
    <References><Reference ReferenceType="Organizes" IsForward="false">ns=1;i=2</Reference>
      <Reference ReferenceType="HasTypeDefinition">ns=1;i=1</Reference>
      <Reference ReferenceType="HasComponent">ns=1;i=%d</Reference><Reference ReferenceType="HasComponent">ns=1;i=%d</Reference>
      <Reference ReferenceType="HasComponent">ns=1;i=%d</Reference><Reference ReferenceType="HasComponent">ns=1;i=%d</Reference></References></UAObject>
`, obj, obj, obj, obj+1, obj+2, obj+3, obj+4)
		vars := []struct{ name, typ, rank, access, value string }{
			{"Speed", "Double", "-1", "3", fmt.Sprintf("<Double>%d.5</Double>", obj)},
			{"Count", "Int32", "-1", "1", fmt.Sprintf("<Int32>%d</Int32>", obj)},
			{"Label", "String", "-1", "1", fmt.Sprintf("<String>machine %d</String>", obj)},
			{"Setpoints", "Double", "1", "1", "<ListOfDouble><Double>1</Double><Double>2</Double><Double>3</Double></ListOfDouble>"},
		}
		for i, v := range vars {
			p(`  <UAVariable NodeId="ns=1;i=%d" BrowseName="1:%s" ParentNodeId="ns=1;i=%d" DataType="%s" ValueRank="%s" AccessLevel="%s"><DisplayName>%s</DisplayName>
    <References><Reference ReferenceType="HasComponent" IsForward="false">ns=1;i=%d</Reference><Reference ReferenceType="HasTypeDefinition">i=63</Reference></References>
    <Value>%s</Value></UAVariable>
`, obj+1+i, v.name, obj, v.typ, v.rank, v.access, v.name, obj, v.value)
		}
		id += perObject
	}
	p("</UANodeSet>\n")
	return b.Flush()
}
