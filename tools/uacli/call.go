package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

func init() {
	register("call", &command{
		synopsis: "<object> <method> [argument...]",
		summary:  "call a method; argument types come from its InputArguments unless --types names them",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			o := &callOptions{}
			fs.StringVar(&o.types, "types", "", "comma-separated built-in types of the arguments, e.g. Double,Double")
			return o.run
		},
	})
}

type callOptions struct {
	types string
}

// callOutput is the --json output of call.
type callOutput struct {
	Object          string            `json:"objectId"`
	Method          string            `json:"methodId"`
	Status          string            `json:"status"`
	InputResults    []string          `json:"inputArgumentResults,omitempty"`
	OutputArguments []json.RawMessage `json:"outputArguments"`
}

func (o *callOptions) run(ctx context.Context, e *env, args []string) error {
	if len(args) < 2 {
		return usagef("call needs an object and a method")
	}
	c, err := e.dial(ctx)
	if err != nil {
		return err
	}
	object, err := e.parseNode(ctx, args[0])
	if err != nil {
		return err
	}
	method, err := e.parseNode(ctx, args[1])
	if err != nil {
		return err
	}
	texts := args[2:]
	var in []ua.Argument
	if o.types != "" {
		names := splitList(o.types)
		if len(names) != len(texts) {
			return usagef("--types names %d types for %d arguments", len(names), len(texts))
		}
		for _, n := range names {
			t, err := parseTypeName(n)
			if err != nil {
				return err
			}
			in = append(in, ua.Argument{DataType: codec.NewNumericNodeId(0, uint32(t)), ValueRank: -1})
		}
	} else {
		if in, err = e.inputArguments(ctx, method); err != nil {
			return err
		}
		if len(in) != len(texts) {
			names := make([]string, len(in))
			for i, a := range in {
				names[i] = a.Name + " " + refTypeName(a.DataType)
			}
			return usagef("method %s takes %d arguments (%s), got %d", method, len(in), strings.Join(names, ", "), len(texts))
		}
	}
	values := make([]codec.Variant, len(texts))
	for i, text := range texts {
		t, err := e.builtinType(ctx, in[i].DataType)
		if err != nil {
			return err
		}
		array := in[i].ValueRank >= 1 || (in[i].ValueRank != -1 && strings.HasPrefix(strings.TrimSpace(text), "["))
		if values[i], err = parseVariant(t, text, array); err != nil {
			return fmt.Errorf("argument %d: %w", i+1, err)
		}
	}
	rctx, cancel := e.requestContext(ctx)
	defer cancel()
	resp, err := c.Call(rctx, &ua.CallRequest{MethodsToCall: []ua.CallMethodRequest{{ObjectId: object, MethodId: method, InputArguments: values}}})
	if err != nil {
		return err
	}
	if len(resp.Results) != 1 {
		return fmt.Errorf("the server answered %d results for 1 call", len(resp.Results))
	}
	r := &resp.Results[0]
	if e.g.json {
		out := callOutput{Object: object.String(), Method: method.String(), Status: r.StatusCode.Name(), OutputArguments: []json.RawMessage{}}
		for _, s := range r.InputArgumentResults {
			out.InputResults = append(out.InputResults, s.Name())
		}
		for i := range r.OutputArguments {
			raw, err := variantJSON(&r.OutputArguments[i])
			if err != nil {
				return err
			}
			out.OutputArguments = append(out.OutputArguments, raw)
		}
		if err := e.writeJSON(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "%s %s: %s\n", object, method, r.StatusCode.Name())
		if len(r.OutputArguments) > 0 {
			t := newTable(e.stdout, "#", "OUTPUT", "TYPE")
			for i := range r.OutputArguments {
				t.add(strconv.Itoa(i), formatVariant(&r.OutputArguments[i]), typeName(&r.OutputArguments[i]))
			}
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	if r.StatusCode.IsBad() {
		fmt.Fprintf(e.stderr, "uacli: call %s: %s: %s\n", method, r.StatusCode.Name(), hint(r.StatusCode))
		for i, s := range r.InputArgumentResults {
			if s.IsBad() {
				fmt.Fprintf(e.stderr, "uacli: argument %d: %s: %s\n", i+1, s.Name(), hint(s))
			}
		}
		return errReported
	}
	return nil
}

// inputArguments reads the InputArguments property of method (Part 3 §5.7); a
// method without one takes no arguments.
func (e *env) inputArguments(ctx context.Context, method codec.NodeId) ([]ua.Argument, error) {
	c, err := e.dial(ctx)
	if err != nil {
		return nil, err
	}
	rctx, cancel := e.requestContext(ctx)
	defer cancel()
	tr, err := c.TranslateBrowsePaths(rctx, &ua.TranslateBrowsePathsToNodeIdsRequest{BrowsePaths: []ua.BrowsePath{{
		StartingNode: method,
		RelativePath: ua.RelativePath{Elements: []ua.RelativePathElement{{
			ReferenceTypeId: codec.NewNumericNodeId(0, id.HasProperty),
			TargetName:      codec.QualifiedName{Name: "InputArguments"},
		}}},
	}}})
	if err != nil {
		return nil, err
	}
	if len(tr.Results) != 1 {
		return nil, fmt.Errorf("the server answered %d results for 1 browse path", len(tr.Results))
	}
	res := tr.Results[0]
	if res.StatusCode == status.BadNoMatch {
		return nil, nil
	}
	if res.StatusCode.IsBad() || len(res.Targets) == 0 {
		return nil, fmt.Errorf("finding the InputArguments of %s: %w (%s)", method, res.StatusCode, hint(res.StatusCode))
	}
	resp, err := c.Read(rctx, &ua.ReadRequest{NodesToRead: []ua.ReadValueId{{NodeId: res.Targets[0].TargetId.NodeId, AttributeId: uint32(attr.Value)}}})
	if err != nil {
		return nil, err
	}
	if len(resp.Results) != 1 || resp.Results[0].Status.IsBad() {
		return nil, fmt.Errorf("reading the InputArguments of %s failed", method)
	}
	v := resp.Results[0].Value
	xs, ok := v.Value().([]codec.ExtensionObject)
	if !ok && !v.IsNull() {
		return nil, fmt.Errorf("the InputArguments of %s are a %s, not an array of Argument", method, typeName(&v))
	}
	args := make([]ua.Argument, len(xs))
	for i, x := range xs {
		a, ok := x.Value.(*ua.Argument)
		if !ok {
			return nil, fmt.Errorf("InputArguments[%d] of %s is not an Argument", i, method)
		}
		args[i] = *a
	}
	return args, nil
}
