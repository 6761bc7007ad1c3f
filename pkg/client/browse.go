package client

import (
	"context"
	"iter"

	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
)

// References browses one node and yields its references, following continuation points
// with BrowseNext (Part 4 §5.8.3). maxPerCall is RequestedMaxReferencesPerNode (0: the
// server decides). When the loop stops early, the open continuation point is released,
// so that the session's limited supply of them (BadNoContinuationPoints) is not used up.
// A failure is yielded once, with a zero reference, and ends the sequence; a Bad
// per-node StatusCode is yielded as a *StatusError.
func (c *Client) References(ctx context.Context, node ua.BrowseDescription, maxPerCall uint32) iter.Seq2[ua.ReferenceDescription, error] {
	return func(yield func(ua.ReferenceDescription, error) bool) {
		br, err := c.Browse(ctx, &ua.BrowseRequest{
			RequestedMaxReferencesPerNode: maxPerCall,
			NodesToBrowse:                 []ua.BrowseDescription{node},
		})
		var res ua.BrowseResult
		if err == nil {
			res, err = single("Browse", br.Results)
		}
		for {
			if err != nil {
				yield(ua.ReferenceDescription{}, err)
				return
			}
			for i := range res.References {
				if !yield(res.References[i], nil) {
					if len(res.ContinuationPoint) > 0 {
						c.releaseContinuation(ctx, res.ContinuationPoint)
					}
					return
				}
			}
			if len(res.ContinuationPoint) == 0 {
				return
			}
			var bn *ua.BrowseNextResponse
			bn, err = c.BrowseNext(ctx, &ua.BrowseNextRequest{ContinuationPoints: [][]byte{res.ContinuationPoint}})
			if err == nil {
				res, err = single("BrowseNext", bn.Results)
			}
		}
	}
}

// single returns the one result of a one-node Browse or BrowseNext.
func single(service string, results []ua.BrowseResult) (ua.BrowseResult, error) {
	if len(results) != 1 {
		return ua.BrowseResult{}, &StatusError{Service: service, Code: status.BadUnexpectedError}
	}
	r := results[0]
	if r.StatusCode.IsBad() {
		return r, &StatusError{Service: service, Code: r.StatusCode}
	}
	return r, nil
}

// releaseContinuation frees a continuation point; a failure is ignored, since the server
// frees it with the session anyway.
func (c *Client) releaseContinuation(ctx context.Context, cp []byte) {
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	_, _ = c.BrowseNext(ctx, &ua.BrowseNextRequest{ReleaseContinuationPoints: true, ContinuationPoints: [][]byte{cp}})
}
