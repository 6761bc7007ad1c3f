package clienttest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
	"uastack.dev/pkg/ua/id"
)

// field selects the BaseEventType field name.
func field(name string) ua.SimpleAttributeOperand {
	return ua.SimpleAttributeOperand{TypeDefinitionId: n0(id.BaseEventType), BrowsePath: []codec.QualifiedName{{Name: name}}, AttributeId: uint32(attr.Value)}
}

// TestClientEvents monitors the demo event source through pkg/client with a filter that
// selects Severity and Message of events above severity 500, emits three events with the
// source's Emit method, and receives the two that pass, in order, with their fields.
func TestClientEvents(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts, trust := testServer(t, nil)
	for _, sec := range securities {
		t.Run(sec.name, func(t *testing.T) {
			c := dial(t, ctx, ts.URL, dialOpts(t, sec, trust)...)
			notes := make(chan *client.Notification, 64)
			sub, err := c.Subscribe(ctx, client.SubscriptionParams{Interval: 50 * time.Millisecond, C: notes})
			require.NoError(t, err)
			source := codec.NewStringNodeId(1, "Demo.Events")
			sevSelect := field("Severity")
			filter := &ua.EventFilter{
				SelectClauses: []ua.SimpleAttributeOperand{field("Severity"), field("Message")},
				WhereClause: ua.ContentFilter{Elements: []ua.ContentFilterElement{{
					FilterOperator: ua.FilterOperatorGreaterThan,
					FilterOperands: []codec.ExtensionObject{
						codec.NewExtensionObject(&sevSelect),
						codec.NewExtensionObject(&ua.LiteralOperand{Value: codec.UInt16Variant(500)}),
					},
				}}},
			}
			res, err := sub.Monitor(ctx, client.MonitorItem{Node: source, Handle: 3, QueueSize: 10, EventFilter: filter})
			require.NoError(t, err)
			require.True(t, res[0].Status.IsGood(), res[0].Status)

			for _, e := range []struct {
				severity uint16
				message  string
			}{{700, "hot"}, {100, "cold"}, {900, "hotter"}} {
				resp, err := c.Call(ctx, &ua.CallRequest{MethodsToCall: []ua.CallMethodRequest{{
					ObjectId: source, MethodId: codec.NewStringNodeId(1, "Demo.Events.Emit"),
					InputArguments: []codec.Variant{codec.UInt16Variant(e.severity), codec.StringVariant(e.message)},
				}}})
				require.NoError(t, err)
				require.True(t, resp.Results[0].StatusCode.IsGood(), resp.Results[0].StatusCode)
			}

			type event struct {
				severity any
				message  string
			}
			var got []event
			deadline := time.After(10 * time.Second)
			for len(got) < 2 {
				select {
				case n := <-notes:
					for _, e := range n.Events {
						require.Equal(t, uint32(3), e.ClientHandle)
						require.Len(t, e.EventFields, 2)
						msg, _ := e.EventFields[1].Value().(codec.LocalizedText)
						got = append(got, event{e.EventFields[0].Value(), msg.Text})
					}
				case <-deadline:
					t.Fatalf("events so far: %+v", got)
				}
			}
			require.Equal(t, []event{{uint16(700), "hot"}, {uint16(900), "hotter"}}, got)
			require.NoError(t, sub.Delete(ctx))
		})
	}
}
