package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

func init() {
	register("read", &command{
		synopsis: "<node>...",
		summary:  "read an attribute (default Value) of one or more nodes",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			o := &readOptions{}
			fs.StringVar(&o.attr, "attr", "Value", "attribute name or number")
			fs.StringVar(&o.indexRange, "range", "", `index range of an array value, e.g. "1:3" (Part 4 §7.27)`)
			return o.run
		},
	})
}

type readOptions struct {
	attr       string
	indexRange string
}

// readResult is one node of a read in --json output; Value is the DataValue in the
// OPC UA JSON encoding.
type readResult struct {
	NodeID    string          `json:"nodeId"`
	Attribute string          `json:"attribute"`
	Status    string          `json:"status"`
	Value     json.RawMessage `json:"value"`
}

func (o *readOptions) run(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("read needs at least one node")
	}
	a, err := parseAttribute(o.attr)
	if err != nil {
		return err
	}
	c, err := e.dial(ctx)
	if err != nil {
		return err
	}
	req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, s := range args {
		n, err := e.parseNode(ctx, s)
		if err != nil {
			return err
		}
		req.NodesToRead = append(req.NodesToRead, ua.ReadValueId{NodeId: n, AttributeId: uint32(a), IndexRange: o.indexRange})
	}
	rctx, cancel := e.requestContext(ctx)
	defer cancel()
	resp, err := c.Read(rctx, req)
	if err != nil {
		return err
	}
	if len(resp.Results) != len(req.NodesToRead) {
		return fmt.Errorf("the server answered %d results for %d nodes", len(resp.Results), len(req.NodesToRead))
	}
	return e.printDataValues(req.NodesToRead, resp.Results)
}

// printDataValues shows one DataValue per node read and reports errReported when
// any of them is Bad.
func (e *env) printDataValues(nodes []ua.ReadValueId, dvs []codec.DataValue) error {
	failed := false
	for i := range dvs {
		failed = failed || dvs[i].Status.IsBad()
	}
	if e.g.json {
		out := make([]readResult, len(dvs))
		for i := range dvs {
			raw, err := dataValueJSON(&dvs[i])
			if err != nil {
				return err
			}
			out[i] = readResult{NodeID: nodes[i].NodeId.String(), Attribute: attr.ID(nodes[i].AttributeId).String(),
				Status: dvs[i].Status.Name(), Value: raw}
		}
		if err := e.writeJSON(struct {
			Results []readResult `json:"results"`
		}{out}); err != nil {
			return err
		}
	} else {
		t := newTable(e.stdout, "NODEID", "ATTRIBUTE", "VALUE", "TYPE", "STATUS", "SOURCE TIMESTAMP")
		for i := range dvs {
			dv := &dvs[i]
			value := formatVariant(&dv.Value)
			if n, ok := dv.Value.Value().(int32); ok && attr.ID(nodes[i].AttributeId) == attr.NodeClass {
				value = ua.NodeClass(n).String()
			}
			t.add(nodes[i].NodeId.String(), attr.ID(nodes[i].AttributeId).String(), value,
				typeName(&dv.Value), dv.Status.Name(), formatTime(dv.SourceTimestamp))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if failed {
		for i := range dvs {
			if dvs[i].Status.IsBad() {
				fmt.Fprintf(e.stderr, "uacli: %s: %s: %s\n", nodes[i].NodeId, dvs[i].Status.Name(), hint(dvs[i].Status))
			}
		}
		return errReported
	}
	return nil
}
