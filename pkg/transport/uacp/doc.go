// Package uacp implements the OPC UA Connection Protocol (UACP, Part 6 §7.1): the framing
// layer under the secure channel.
//
// A connection starts with a Hello (HEL) from the client and an Acknowledge (ACK) from the
// server that together fix the buffer sizes, message sizes and chunk counts both sides use
// (Part 6 §7.1.3). Either side may end it with an Error message (ERR, Part 6 §7.1.2.5). A
// server that dials out to a client first sends a ReverseHello (RHE, Part 6 §7.1.2.6). After
// the handshake the connection carries secure-channel chunks (MSG, OPN, CLO, Part 6 §6.7.2),
// which this package frames, bounds and hands to the uasc layer without looking inside.
//
// Accept and Dial run the handshake over a net.Conn and return a Conn. Conn.ReadChunk reads
// one chunk into a buffer taken from a size-class Pool; the caller owns that buffer until it
// calls Chunk.Release. Conn.WriteChunks writes chunks built by the caller, coalesced into as
// few system calls as the platform allows.
//
// Errors at the protocol edge carry a status.Code: StatusOf extracts it, and an ERR message
// received from the peer is returned as an *Error.
package uacp
