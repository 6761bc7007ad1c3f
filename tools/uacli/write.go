package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

func init() {
	register("write", &command{
		synopsis: "<node> <value>",
		summary:  "write the Value of a node; the type is the node's DataType unless --type names one",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			o := &writeOptions{}
			fs.StringVar(&o.typ, "type", "", "built-in type of the value (Int32, Double, String, ...); default from the node's DataType")
			fs.StringVar(&o.indexRange, "range", "", `index range to write into an array, e.g. "1"`)
			return o.run
		},
	})
}

type writeOptions struct {
	typ        string
	indexRange string
}

func (o *writeOptions) run(ctx context.Context, e *env, args []string) error {
	if len(args) != 2 {
		return usagef("write needs a node and a value (arrays as JSON: '[1, 2]')")
	}
	c, err := e.dial(ctx)
	if err != nil {
		return err
	}
	node, err := e.parseNode(ctx, args[0])
	if err != nil {
		return err
	}
	text := args[1]
	t, array := codec.TypeVariant, strings.HasPrefix(strings.TrimSpace(text), "[")
	if o.typ != "" {
		if t, err = parseTypeName(o.typ); err != nil {
			return err
		}
	} else {
		if t, array, err = e.valueType(ctx, node, text); err != nil {
			return err
		}
	}
	if o.indexRange != "" && !strings.HasPrefix(strings.TrimSpace(text), "[") {
		// A write into an index range carries an array of the range's length
		// (Part 4 §7.27), even for one element.
		one, _ := json.Marshal([]string{text})
		text, array = string(one), true
	}
	v, err := parseVariant(t, text, array)
	if err != nil {
		return err
	}
	rctx, cancel := e.requestContext(ctx)
	defer cancel()
	resp, err := c.Write(rctx, &ua.WriteRequest{NodesToWrite: []ua.WriteValue{{
		NodeId: node, AttributeId: uint32(attr.Value), IndexRange: o.indexRange, Value: codec.DataValue{Value: v},
	}}})
	if err != nil {
		return err
	}
	if len(resp.Results) != 1 {
		return fmt.Errorf("the server answered %d results for 1 node", len(resp.Results))
	}
	code := resp.Results[0]
	if e.g.json {
		raw, err := variantJSON(&v)
		if err != nil {
			return err
		}
		if err := e.writeJSON(struct {
			NodeID string          `json:"nodeId"`
			Status string          `json:"status"`
			Value  json.RawMessage `json:"value"`
		}{node.String(), code.Name(), raw}); err != nil {
			return err
		}
	} else {
		tb := newTable(e.stdout, "NODEID", "VALUE", "TYPE", "STATUS")
		tb.add(node.String(), formatVariant(&v), typeName(&v), code.Name())
		if err := tb.flush(); err != nil {
			return err
		}
	}
	if code.IsBad() {
		fmt.Fprintf(e.stderr, "uacli: %s: %s: %s\n", node, code.Name(), hint(code))
		return errReported
	}
	return nil
}

// valueType reads the DataType and ValueRank of node and returns the built-in type
// to write and whether the value is an array (ValueRank 1 or more, or text that is a
// JSON array where the rank allows either).
func (e *env) valueType(ctx context.Context, node codec.NodeId, text string) (codec.TypeID, bool, error) {
	c, err := e.dial(ctx)
	if err != nil {
		return 0, false, err
	}
	rctx, cancel := e.requestContext(ctx)
	defer cancel()
	resp, err := c.Read(rctx, &ua.ReadRequest{NodesToRead: []ua.ReadValueId{
		{NodeId: node, AttributeId: uint32(attr.DataType)},
		{NodeId: node, AttributeId: uint32(attr.ValueRank)},
	}})
	if err != nil {
		return 0, false, err
	}
	if len(resp.Results) != 2 {
		return 0, false, fmt.Errorf("the server answered %d results for 2 attributes", len(resp.Results))
	}
	for i, name := range []string{"DataType", "ValueRank"} {
		if s := resp.Results[i].Status; s.IsBad() {
			return 0, false, fmt.Errorf("reading the %s of %s: %w (%s)", name, node, s, hint(s))
		}
	}
	dt := resp.Results[0].Value.NodeId()
	t, err := e.builtinType(ctx, dt)
	if err != nil {
		return 0, false, err
	}
	rank, _ := resp.Results[1].Value.Value().(int32)
	array := rank >= 1 || (rank != -1 && strings.HasPrefix(strings.TrimSpace(text), "["))
	return t, array, nil
}
