// Package uasc implements UA Secure Conversation (Part 6 §6.7): the secure channel that
// carries OPC UA service messages over a uacp connection.
//
// A channel starts with an OpenSecureChannel exchange (OPN, Part 6 §6.7.4, Part 4 §5.5.2)
// secured with the asymmetric algorithms of its SecurityPolicy; both ends then derive
// symmetric keys from the two nonces (Part 6 §6.7.5) and exchange MSG chunks signed and, in
// SignAndEncrypt mode, encrypted with them. The client renews the token before it expires
// (Part 6 §6.7.6) and ends the channel with CloseSecureChannel (CLO); the server closes a
// channel whose newest token is 25% past its lifetime (Part 4 §5.5.2.1).
//
// Server is the server role: NewServer checks a ServerConfig once, Server.Serve accepts
// connections within the server's limits, Server.ServeConn runs one channel over an
// accepted uacp.Conn and hands every complete request to the ChannelHandler its Handler
// made for the channel, and Server.Revalidate closes the channels whose client
// certificate a changed trust list no longer accepts. Dial is the client role and returns
// a ClientChannel.
//
// Chunks are built and checked in place: a message is encoded straight into the bodies of
// chunk buffers from the connection's uacp.Pool, behind the space reserved for the headers,
// continuing in the next buffer when one is full; each is then padded, signed and
// encrypted in place (chunk.go, send.go). Received chunks are decrypted and
// verified in the buffer uacp.Conn.ReadChunk returned, their sequence numbers checked, and
// multi-chunk messages reassembled within the negotiated limits and a byte budget shared by
// all channels of a Server, of which each channel holds at most its share and for at most
// the assembly deadline (receive.go).
//
// The server role is laid out by protocol phase, as crypto/tls is: config.go (ServerConfig,
// NewServer), accept.go (the accept loop Serve), serve.go (one channel's read loop,
// ServeConn), open.go (the first OpenSecureChannel and its renewals), request.go (the
// Handler and the requests of an open channel), recycle.go (requests handed back and
// repeated), trust.go (Revalidate) and expiry.go (a token that was not renewed).
//
// Lock names: a method named ...Locked is called with the lock it names held and returns
// with it held; one named ...Unlock is called with it held and returns with it released
// (the send half writes without holding smu).
package uasc
