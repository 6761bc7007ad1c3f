// Package procwire is what the process host and a plugin process agree on: the
// go-plugin handshake, and the gRPC service that carries batches of nodemgr frames
// (package wire) in their OPC UA binary encoding.
//
// The service is written by hand, with no protoc step: its two methods carry the
// well-known wrapperspb.BytesValue, so that the only schema of what crosses is the
// frames' own (RATIONALE.md in package processhost says why).
//
//	service uastack.plugins.v1.NodeManager {
//	  // A batch of request frames; the reply is the batch of their replies.
//	  rpc Call(google.protobuf.BytesValue) returns (google.protobuf.BytesValue);
//	  // The frames the manager pushes (DataChanges, Events), one per message.
//	  rpc Pushes(google.protobuf.BytesValue) returns (stream google.protobuf.BytesValue);
//	}
package procwire

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"uastack.dev/plugins/wire"
)

// ProtocolVersion is the version of this service and of the frames it carries. A
// change that an older peer would misread takes a new version; go-plugin refuses a
// plugin that speaks another.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake of a node-manager plugin. The cookie only tells
// a binary started by hand that it is a plugin; it is not a secret (AutoMTLS
// authenticates the connection).
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "UASTACK_NODE_MANAGER_PLUGIN",
	MagicCookieValue: "c1b3a0d2-uastack-node-manager",
}

// PluginName is the name the plugin is dispensed by.
const PluginName = "nodemanager"

// ServiceName is the full name of the gRPC service.
const ServiceName = "uastack.plugins.v1.NodeManager"

// MaxMessage bounds one gRPC message either way: a batch the codec would refuse to
// decode anyway (codec.Limits.MaxMessageSize) is refused before it is read.
var MaxMessage = wire.Limits.MaxMessageSize

// Server is the plugin's side of the service.
type Server interface {
	// Call answers a batch of request frames with the batch of their replies; ctx
	// carries the host's deadline.
	Call(ctx context.Context, batch *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error)
	// Pushes sends the frames the manager pushes, one BytesValue each, until the
	// stream's context ends.
	Pushes(stream grpc.ServerStream) error
}

// ServiceDesc describes the service for grpc.Server.RegisterService.
var ServiceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*Server)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Call",
		Handler:    callHandler,
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Pushes",
		Handler:       pushesHandler,
		ServerStreams: true,
	}},
}

const (
	callMethod   = "/" + ServiceName + "/Call"
	pushesMethod = "/" + ServiceName + "/Pushes"
)

func callHandler(srv any, ctx context.Context, dec func(any) error, intercept grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.BytesValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	if intercept == nil {
		return srv.(Server).Call(ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: callMethod}
	return intercept(ctx, in, info, func(ctx context.Context, req any) (any, error) {
		return srv.(Server).Call(ctx, req.(*wrapperspb.BytesValue))
	})
}

func pushesHandler(srv any, stream grpc.ServerStream) error {
	// The request is empty; it is read so that the stream is well-formed.
	if err := stream.RecvMsg(new(wrapperspb.BytesValue)); err != nil {
		return err
	}
	return srv.(Server).Pushes(stream)
}

// Plugin is the go-plugin Plugin of a node manager: in a plugin process it serves
// Server; in the host it dispenses a *Client.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is what the plugin process serves; nil in the host.
	Impl Server
}

// Plugins returns the plugin set of a node-manager plugin serving s (nil in the host).
func Plugins(s Server) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &Plugin{Impl: s}}
}

// GRPCServer registers the service (plugin.GRPCPlugin).
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return fmt.Errorf("procwire: no server to register")
	}
	s.RegisterService(&ServiceDesc, p.Impl)
	return nil
}

// GRPCClient returns a *Client over conn (plugin.GRPCPlugin). go-plugin cancels ctx
// when the plugin process exits.
func (p *Plugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Client{conn: conn, exited: ctx}, nil
}

// Client is the host's side of the service. It is safe for concurrent use.
type Client struct {
	conn   *grpc.ClientConn
	exited context.Context
}

// Exited is closed when the plugin process has exited.
func (c *Client) Exited() <-chan struct{} { return c.exited.Done() }

// Call sends a batch of request frames and returns the batch of replies. The error is
// gRPC's (a google.golang.org/grpc/status error).
func (c *Client) Call(ctx context.Context, batch []byte) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	if err := c.conn.Invoke(ctx, callMethod, &wrapperspb.BytesValue{Value: batch}, out,
		grpc.MaxCallSendMsgSize(MaxMessage), grpc.MaxCallRecvMsgSize(MaxMessage)); err != nil {
		return nil, err
	}
	return out.Value, nil
}

// Pushes opens the stream of pushed frames, which lasts until ctx ends, and returns
// its receive function: each call returns the next frame, or the error that ended the
// stream.
func (c *Client) Pushes(ctx context.Context) (recv func() ([]byte, error), err error) {
	stream, err := c.conn.NewStream(ctx, &ServiceDesc.Streams[0], pushesMethod, grpc.MaxCallRecvMsgSize(MaxMessage))
	if err != nil {
		return nil, err
	}
	if err := stream.SendMsg(&wrapperspb.BytesValue{}); err != nil {
		return nil, err
	}
	if err := stream.CloseSend(); err != nil {
		return nil, err
	}
	return func() ([]byte, error) {
		m := new(wrapperspb.BytesValue)
		if err := stream.RecvMsg(m); err != nil {
			return nil, err
		}
		return m.Value, nil
	}, nil
}

// ServerOptions are the gRPC options of the plugin's server.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMessage), grpc.MaxSendMsgSize(MaxMessage)}
}
