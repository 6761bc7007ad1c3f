package server

import (
	"slices"

	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/status"
)

// getEndpoints answers GetEndpoints (Part 4 §5.4.4) with every endpoint, or none when
// ProfileUris is set and does not name the UA-TCP transport profile.
func (s *Server) getEndpoints(m *ua.GetEndpointsRequest) *ua.GetEndpointsResponse {
	resp := &ua.GetEndpointsResponse{ResponseHeader: s.header(m.RequestHeader, status.Good)}
	if len(m.ProfileUris) > 0 && !slices.Contains(m.ProfileUris, TransportProfileUATCP) {
		return resp
	}
	resp.Endpoints = s.endpoints
	return resp
}

// findServers answers FindServers (Part 4 §5.4.2) with this server's
// ApplicationDescription, unless ServerUris is set and does not name it.
func (s *Server) findServers(m *ua.FindServersRequest) *ua.FindServersResponse {
	resp := &ua.FindServersResponse{ResponseHeader: s.header(m.RequestHeader, status.Good)}
	if len(m.ServerUris) > 0 && !slices.Contains(m.ServerUris, s.cfg.Application.ApplicationURI) {
		return resp
	}
	resp.Servers = []ua.ApplicationDescription{applicationDescription(s.cfg)}
	return resp
}
