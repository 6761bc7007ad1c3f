package session

import (
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/ua"
)

// Record is what a session is, as plain data: everything another server of a redundant set
// needs to take the session over (Part 4 §6.6.2), and what the diagnostics describe. It is
// a copy: changing it changes no session.
type Record struct {
	SessionID           codec.NodeId
	AuthenticationToken codec.NodeId
	Name                string
	// ClientDescription, ServerURI, EndpointURL and MaxResponseMessageSize are as the
	// client sent them in CreateSession.
	ClientDescription      ua.ApplicationDescription
	ServerURI              string
	EndpointURL            string
	MaxResponseMessageSize uint32
	// Timeout is the revised session timeout.
	Timeout time.Duration
	// ClientCertificate is the client's application certificate (DER) from CreateSession;
	// nil over SecurityPolicy None.
	ClientCertificate []byte
	// ServerNonce is the last nonce the server sent; the next ActivateSession signs it.
	ServerNonce []byte
	// ChannelID is the secure channel the session is bound to: the one that created it
	// until activation, then the one that last activated it.
	ChannelID uint32
	Activated bool
	// Identity is who the session runs as since its last activation.
	Identity nodemgr.Principal
	// SecurityPolicyURI and SecurityMode are those of the channel of the last activation.
	SecurityPolicyURI string
	SecurityMode      ua.MessageSecurityMode
	LocaleIDs         []string
	// CreatedAt is when the session was created (ClientConnectionTime).
	CreatedAt codec.DateTime
}

// recordVersion is the first byte of an encoded Record; a decoder refuses others.
const recordVersion = 1

// EncodeBinary appends r to e in the OPC UA Binary encoding of its fields, in order,
// behind a version byte.
func (r *Record) EncodeBinary(e *codec.Encoder) {
	e.Byte(recordVersion)
	e.NodeId(r.SessionID)
	e.NodeId(r.AuthenticationToken)
	e.String(r.Name)
	r.ClientDescription.EncodeBinary(e)
	e.String(r.ServerURI)
	e.String(r.EndpointURL)
	e.UInt32(r.MaxResponseMessageSize)
	e.Int64(int64(r.Timeout))
	e.ByteString(r.ClientCertificate)
	e.ByteString(r.ServerNonce)
	e.UInt32(r.ChannelID)
	e.Boolean(r.Activated)
	r.Identity.EncodeBinary(e)
	e.String(r.SecurityPolicyURI)
	e.Int32(int32(r.SecurityMode))
	encodeStrings(e, r.LocaleIDs)
	e.DateTime(r.CreatedAt)
}

// DecodeBinary reads r as EncodeBinary wrote it; errors stick in d.
func (r *Record) DecodeBinary(d *codec.Decoder) {
	if v := d.Byte(); d.Err() == nil && v != recordVersion {
		d.Fail(errVersion)
		return
	}
	r.SessionID = d.NodeId()
	r.AuthenticationToken = d.NodeId()
	r.Name = d.String()
	r.ClientDescription.DecodeBinary(d)
	r.ServerURI = d.String()
	r.EndpointURL = d.String()
	r.MaxResponseMessageSize = d.UInt32()
	r.Timeout = time.Duration(d.Int64())
	r.ClientCertificate = d.ByteString()
	r.ServerNonce = d.ByteString()
	r.ChannelID = d.UInt32()
	r.Activated = d.Boolean()
	r.Identity.DecodeBinary(d)
	r.SecurityPolicyURI = d.String()
	r.SecurityMode = ua.MessageSecurityMode(d.Int32())
	r.LocaleIDs = decodeStrings(d)
	r.CreatedAt = d.DateTime()
}

func encodeStrings(e *codec.Encoder, s []string) {
	e.ArrayLength(len(s), s == nil)
	for _, v := range s {
		e.String(v)
	}
}

func decodeStrings(d *codec.Decoder) []string {
	n := d.ArrayLength(4)
	if n < 0 {
		return nil
	}
	s := make([]string, n)
	for i := range s {
		s[i] = d.String()
	}
	return s
}
