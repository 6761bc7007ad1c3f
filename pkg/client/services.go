package client

import (
	"context"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

// The service methods take the request the caller built and fill its RequestHeader
// (token, handle, timestamp, TimeoutHint); the caller must not use the request
// concurrently. The response belongs to the caller. A Bad ServiceResult or a
// ServiceFault is a *StatusError; per-item status codes stay in the results.

// do sends req and checks that the answer is a T.
func do[T codec.Structure](c *Client, ctx context.Context, service string, h *ua.RequestHeader, req codec.Structure, idempotent bool) (T, error) {
	var zero T
	resp, err := c.send(ctx, service, h, req, idempotent)
	if err != nil {
		return zero, err
	}
	r, ok := resp.(T)
	if !ok {
		return zero, &StatusError{Service: service, Code: status.BadUnknownResponse}
	}
	return r, nil
}

// check returns a *StatusError when h carries a Bad ServiceResult.
func check(service string, h *ua.ResponseHeader) error {
	if h.ServiceResult.IsBad() {
		return &StatusError{Service: service, Code: h.ServiceResult, RetryAfter: retryAfter(h)}
	}
	return nil
}

// Read reads attributes (Part 4 §5.10.2). Safe for concurrent use.
func (c *Client) Read(ctx context.Context, req *ua.ReadRequest) (*ua.ReadResponse, error) {
	r, err := do[*ua.ReadResponse](c, ctx, "Read", &req.RequestHeader, req, true)
	if err != nil {
		return nil, err
	}
	return r, check("Read", &r.ResponseHeader)
}

// ReadValue reads the Value attribute of one node. The DataValue's Status is the
// per-item result; the error is for the call as a whole.
func (c *Client) ReadValue(ctx context.Context, node codec.NodeId) (codec.DataValue, error) {
	r, err := c.Read(ctx, &ua.ReadRequest{
		TimestampsToReturn: ua.TimestampsToReturnNeither,
		NodesToRead:        []ua.ReadValueId{{NodeId: node, AttributeId: uint32(attr.Value)}},
	})
	if err != nil {
		return codec.DataValue{}, err
	}
	if len(r.Results) != 1 {
		return codec.DataValue{}, &StatusError{Service: "Read", Code: status.BadUnexpectedError}
	}
	return r.Results[0], nil
}

// Write writes attributes (Part 4 §5.10.4). It is not sent again after a reconnect.
func (c *Client) Write(ctx context.Context, req *ua.WriteRequest) (*ua.WriteResponse, error) {
	r, err := do[*ua.WriteResponse](c, ctx, "Write", &req.RequestHeader, req, false)
	if err != nil {
		return nil, err
	}
	return r, check("Write", &r.ResponseHeader)
}

// WriteValue writes the Value attribute of one node and returns its per-item status.
func (c *Client) WriteValue(ctx context.Context, node codec.NodeId, v codec.Variant) (status.Code, error) {
	r, err := c.Write(ctx, &ua.WriteRequest{NodesToWrite: []ua.WriteValue{{
		NodeId: node, AttributeId: uint32(attr.Value), Value: codec.DataValue{Value: v},
	}}})
	if err != nil {
		return 0, err
	}
	if len(r.Results) != 1 {
		return 0, &StatusError{Service: "Write", Code: status.BadUnexpectedError}
	}
	return r.Results[0], nil
}

// Browse browses references (Part 4 §5.8.2). A result with a ContinuationPoint must be
// continued or released with BrowseNext; Client.References does both.
func (c *Client) Browse(ctx context.Context, req *ua.BrowseRequest) (*ua.BrowseResponse, error) {
	r, err := do[*ua.BrowseResponse](c, ctx, "Browse", &req.RequestHeader, req, true)
	if err != nil {
		return nil, err
	}
	return r, check("Browse", &r.ResponseHeader)
}

// BrowseNext continues (or, with ReleaseContinuationPoints, releases) browse
// continuation points (Part 4 §5.8.3).
func (c *Client) BrowseNext(ctx context.Context, req *ua.BrowseNextRequest) (*ua.BrowseNextResponse, error) {
	r, err := do[*ua.BrowseNextResponse](c, ctx, "BrowseNext", &req.RequestHeader, req, true)
	if err != nil {
		return nil, err
	}
	return r, check("BrowseNext", &r.ResponseHeader)
}

// TranslateBrowsePaths resolves browse paths to NodeIds (Part 4 §5.8.4).
func (c *Client) TranslateBrowsePaths(ctx context.Context, req *ua.TranslateBrowsePathsToNodeIdsRequest) (*ua.TranslateBrowsePathsToNodeIdsResponse, error) {
	const service = "TranslateBrowsePathsToNodeIds"
	r, err := do[*ua.TranslateBrowsePathsToNodeIdsResponse](c, ctx, service, &req.RequestHeader, req, true)
	if err != nil {
		return nil, err
	}
	return r, check(service, &r.ResponseHeader)
}

// Call calls methods (Part 4 §5.11.2). It is not sent again after a reconnect.
func (c *Client) Call(ctx context.Context, req *ua.CallRequest) (*ua.CallResponse, error) {
	r, err := do[*ua.CallResponse](c, ctx, "Call", &req.RequestHeader, req, false)
	if err != nil {
		return nil, err
	}
	return r, check("Call", &r.ResponseHeader)
}

// RegisterNodes registers nodes for repeated access (Part 4 §5.8.5) and returns the ids
// to use instead. Registered ids belong to the session: a reconnect that had to create
// a new session invalidates them.
func (c *Client) RegisterNodes(ctx context.Context, nodes []codec.NodeId) ([]codec.NodeId, error) {
	req := &ua.RegisterNodesRequest{NodesToRegister: nodes}
	r, err := do[*ua.RegisterNodesResponse](c, ctx, "RegisterNodes", &req.RequestHeader, req, false)
	if err != nil {
		return nil, err
	}
	if err := check("RegisterNodes", &r.ResponseHeader); err != nil {
		return nil, err
	}
	return r.RegisteredNodeIds, nil
}

// UnregisterNodes releases registered ids (Part 4 §5.8.6).
func (c *Client) UnregisterNodes(ctx context.Context, nodes []codec.NodeId) error {
	req := &ua.UnregisterNodesRequest{NodesToUnregister: nodes}
	r, err := do[*ua.UnregisterNodesResponse](c, ctx, "UnregisterNodes", &req.RequestHeader, req, false)
	if err != nil {
		return err
	}
	return check("UnregisterNodes", &r.ResponseHeader)
}
