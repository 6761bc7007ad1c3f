package server

import (
	"net/url"
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/discovery"
	"uastack.dev/pkg/ua"
	"uastack.dev/services/server/internal/pipeline"
)

// selfKey is the key of this server in its discovery cache.
const selfKey = "self"

// discoveryAnswers holds the server's discovery answers, built on first use from the
// endpoints New made (the cache encodes each answer once per host and locale).
type discoveryAnswers struct {
	once  sync.Once
	cache *discovery.Cache
}

func (s *Server) discoveryCache() *discovery.Cache {
	s.disc.once.Do(func() {
		hosts := append([]string(nil), s.cfg.Endpoint.Hostnames...)
		if u, err := url.Parse(s.cfg.Endpoint.EndpointURL); err == nil && u.Hostname() != "" {
			hosts = append(hosts, u.Hostname())
		}
		s.disc.cache = discovery.NewCache()
		s.disc.cache.Set(selfKey, &discovery.Server{
			Application: applicationDescription(s.cfg),
			Endpoints:   s.endpoints,
			Hosts:       hosts,
			// Orders the servers of one ApplicationUri, and this cache holds this server
			// alone; clients read the live ServiceLevel from the Server object
			// (redundancy.go).
			ServiceLevel: 255,
		})
	})
	return s.disc.cache
}

// getEndpoints answers GetEndpoints (Part 4 §5.4.4) from the discovery cache: every
// endpoint, or those whose transport profile ProfileUris names, with the host the client
// called where the server is reached by it.
func (s *Server) getEndpoints(r *pipeline.Request[*conn], m *ua.GetEndpointsRequest) {
	a := s.discoveryCache().GetEndpoints(selfKey, m, codec.DateTimeOf(r.Now()))
	r.Respond(a)
	a.Release()
}

// findServers answers FindServers (Part 4 §5.4.2) with this server's
// ApplicationDescription, unless ServerUris is set and does not name it.
func (s *Server) findServers(r *pipeline.Request[*conn], m *ua.FindServersRequest) {
	a := s.discoveryCache().FindServers(m, codec.DateTimeOf(r.Now()))
	r.Respond(a)
	a.Release()
}
