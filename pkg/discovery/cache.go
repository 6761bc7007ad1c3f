// Package discovery keeps what FindServers and GetEndpoints answer (Part 4 §5.4.2,
// §5.4.4) as encoded response messages, so that an answer costs a map lookup and a copy
// instead of building endpoint, user-token-policy and application descriptions for every
// caller. A server answers its own discovery services from a Cache; the discovery
// service answers for itself and for every server registered with it.
package discovery

import (
	"slices"
	"strings"
	"sync"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/status"
)

// Server is what a Cache knows of one server.
type Server struct {
	// Application is the server's ApplicationDescription as FindServers returns it; its
	// ApplicationName is replaced by the entry of Names that suits the caller's locales.
	Application ua.ApplicationDescription
	// Names are the server's names in several locales (RegisteredServer.ServerNames);
	// empty means Application.ApplicationName only.
	Names []codec.LocalizedText
	// Endpoints are the server's endpoints as it describes them.
	Endpoints []ua.EndpointDescription
	// Hosts are the host names and addresses the server is reached by. When a client
	// calls one of them, the endpoint URLs it gets carry that host instead of the
	// configured one (Part 4 §5.4.4: the EndpointUrl "determines what URLs to return").
	Hosts []string
	// ServiceLevel ranks servers that share an ApplicationUri (a redundant set):
	// FindServers lists the highest first, so that clients try the healthiest node first.
	ServiceLevel byte
}

// maxAnswers bounds the encoded answers a Cache keeps. Keys derive from what callers
// send (locales, the host they called), so a full cache starts over rather than grow.
const maxAnswers = 1024

// Cache holds the servers a discovery endpoint answers for and their encoded answers.
// Answers are built on first demand and dropped when a server is set or removed. It is
// safe for concurrent use.
type Cache struct {
	mu      sync.RWMutex
	servers map[string]*Server // by the key given to Set
	order   []string           // keys in the order of the first Set
	answers map[answerKey][]byte
	gen     uint64 // counts changes, so that an answer built before one is not kept
}

// answerKey says what varies an answer. Every field is bounded by the servers' own
// data except locale, which is a caller's string: maxAnswers bounds those.
type answerKey struct {
	findServers bool
	server      string // GetEndpoints: the key of the server asked about
	host        string // the caller's host when it is one of Server.Hosts
	locale      string // the first requested locale id
	profiles    uint64 // GetEndpoints: which of the server's transport profiles are wanted
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{servers: make(map[string]*Server), answers: make(map[answerKey][]byte)}
}

// Set adds or replaces the server under key. The Cache keeps srv; the caller must not
// change it afterwards.
func (c *Cache) Set(key string, srv *Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.servers[key]; !ok {
		c.order = append(c.order, key)
	}
	c.servers[key] = srv
	c.changedLocked()
}

func (c *Cache) changedLocked() {
	clear(c.answers)
	c.gen++
}

// Remove drops the server under key.
func (c *Cache) Remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.servers[key]; !ok {
		return
	}
	delete(c.servers, key)
	c.order = slices.DeleteFunc(c.order, func(k string) bool { return k == key })
	c.changedLocked()
}

// Get returns the server under key.
func (c *Cache) Get(key string) (*Server, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.servers[key]
	return s, ok
}

// Keys returns the keys of every server, in the order they were first set.
func (c *Cache) Keys() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.order)
}

// GetEndpoints answers m for the server under key: its endpoints whose transport
// profile m asks for, with the caller's host where the server is reached by it. When
// other servers share its ApplicationUri (a redundant set), their endpoints are in the
// answer too, the servers ordered by ServiceLevel, highest first, so that a client
// taking the first suitable endpoint takes the healthiest node. It returns nil when
// there is no such server. Release the Answer once it is sent.
func (c *Cache) GetEndpoints(key string, m *ua.GetEndpointsRequest, now codec.DateTime) *Answer {
	c.mu.RLock()
	srv, ok := c.servers[key]
	if !ok {
		c.mu.RUnlock()
		return nil
	}
	k := answerKey{server: key, host: knownHost(srv.Hosts, hostOf(m.EndpointUrl)), locale: firstLocale(m.LocaleIds), profiles: profileMask(srv, m.ProfileUris)}
	body, ok := c.answers[k]
	gen := c.gen
	if !ok {
		body = encodeEndpoints(c.redundantSetLocked(key, srv), srv, k)
	}
	c.mu.RUnlock()
	if !ok {
		body = c.store(k, body, gen)
	}
	return newAnswer(typeGetEndpoints, body, m.RequestHeader.RequestHandle, now)
}

// redundantSetLocked returns srv and the other servers with its ApplicationUri, highest
// ServiceLevel first, srv first among equals. The caller holds c.mu.
func (c *Cache) redundantSetLocked(key string, srv *Server) []*Server {
	set := []*Server{srv}
	for _, k := range c.order {
		if other := c.servers[k]; k != key && other.Application.ApplicationUri == srv.Application.ApplicationUri {
			set = append(set, other)
		}
	}
	slices.SortStableFunc(set, func(a, b *Server) int { return int(b.ServiceLevel) - int(a.ServiceLevel) })
	return set
}

// FindServers answers m: every server, or those whose ApplicationUri m names, those of
// one ApplicationUri ordered by ServiceLevel, highest first (Part 4 §5.4.2). Release the
// Answer once it is sent.
func (c *Cache) FindServers(m *ua.FindServersRequest, now codec.DateTime) *Answer {
	k := answerKey{findServers: true, locale: firstLocale(m.LocaleIds)}
	if len(m.ServerUris) > 0 {
		// A filtered answer is not kept: the filter is the caller's and rarely repeats.
		c.mu.RLock()
		body := c.encodeServers(k, m.ServerUris)
		c.mu.RUnlock()
		return newAnswer(typeFindServers, body, m.RequestHeader.RequestHandle, now)
	}
	c.mu.RLock()
	body, ok := c.answers[k]
	gen := c.gen
	if !ok {
		body = c.encodeServers(k, nil)
	}
	c.mu.RUnlock()
	if !ok {
		body = c.store(k, body, gen)
	}
	return newAnswer(typeFindServers, body, m.RequestHeader.RequestHandle, now)
}

// store keeps body, built at generation gen, under k and returns it; or returns the body
// a concurrent caller kept first. A body built before a change is returned to its caller
// but not kept.
func (c *Cache) store(k answerKey, body []byte, gen uint64) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.answers[k]; ok {
		return old
	}
	if gen != c.gen {
		return body
	}
	if len(c.answers) >= maxAnswers {
		clear(c.answers)
	}
	c.answers[k] = body
	return body
}

// encodeEndpoints encodes the GetEndpointsResponse for k of the servers in set, asked
// among them, with a zero Timestamp and RequestHandle that the Answer replaces. The
// caller's host applies to asked only: the others are reached by their own names.
func encodeEndpoints(set []*Server, asked *Server, k answerKey) []byte {
	resp := ua.GetEndpointsResponse{ResponseHeader: ua.ResponseHeader{ServiceResult: status.Good}}
	profiles := serverProfiles(asked)
	for _, srv := range set {
		for _, ep := range srv.Endpoints {
			if i := slices.Index(profiles, ep.TransportProfileUri); i >= 0 && k.profiles&(1<<min(i, 63)) == 0 || i < 0 && k.profiles != ^uint64(0) {
				continue
			}
			ep.Server = localized(srv, k.locale)
			if k.host != "" && srv == asked {
				ep.EndpointUrl = withHost(ep.EndpointUrl, k.host)
				ep.Server.DiscoveryUrls = withHosts(ep.Server.DiscoveryUrls, k.host)
			}
			resp.Endpoints = append(resp.Endpoints, ep)
		}
	}
	return encode(&resp)
}

// encodeServers encodes the FindServersResponse for k of the servers uris names (all
// when uris is nil). The caller holds c.mu for reading.
func (c *Cache) encodeServers(k answerKey, uris []string) []byte {
	resp := ua.FindServersResponse{ResponseHeader: ua.ResponseHeader{ServiceResult: status.Good}}
	var list []*Server
	for _, key := range c.order {
		srv := c.servers[key]
		if uris != nil && !slices.Contains(uris, srv.Application.ApplicationUri) {
			continue
		}
		list = append(list, srv)
	}
	// Group by ApplicationUri in the order of first appearance, highest ServiceLevel first
	// inside a group.
	first := make(map[string]int, len(list))
	for i, srv := range list {
		if _, ok := first[srv.Application.ApplicationUri]; !ok {
			first[srv.Application.ApplicationUri] = i
		}
	}
	slices.SortStableFunc(list, func(a, b *Server) int {
		ga, gb := first[a.Application.ApplicationUri], first[b.Application.ApplicationUri]
		if ga != gb {
			return ga - gb
		}
		return int(b.ServiceLevel) - int(a.ServiceLevel)
	})
	for _, srv := range list {
		resp.Servers = append(resp.Servers, localized(srv, k.locale))
	}
	return encode(&resp)
}

// localized returns srv's ApplicationDescription named in locale, or in the first of
// its names when none has that locale (Part 4 §5.4.2: "the Server shall return the
// first one").
func localized(srv *Server, locale string) ua.ApplicationDescription {
	app := srv.Application
	if len(srv.Names) == 0 {
		return app
	}
	app.ApplicationName = srv.Names[0]
	for _, n := range srv.Names {
		if locale != "" && strings.EqualFold(n.Locale, locale) {
			app.ApplicationName = n
			break
		}
	}
	return app
}

func encode(msg codec.Structure) []byte {
	e := codec.NewEncoder(nil)
	msg.EncodeBinary(e)
	return e.Bytes()
}

func firstLocale(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// serverProfiles returns the distinct transport profiles of srv's endpoints, in order.
func serverProfiles(srv *Server) []string {
	var out []string
	for _, ep := range srv.Endpoints {
		if !slices.Contains(out, ep.TransportProfileUri) {
			out = append(out, ep.TransportProfileUri)
		}
	}
	return out
}

// profileMask returns which of srv's transport profiles wanted names, as bits in the
// order of serverProfiles; no filter wants them all. It does not allocate: it walks the
// endpoints rather than building serverProfiles.
func profileMask(srv *Server, wanted []string) uint64 {
	if len(wanted) == 0 {
		return ^uint64(0)
	}
	var mask uint64
	n := 0
	for i, ep := range srv.Endpoints {
		seen := false
		for _, prev := range srv.Endpoints[:i] {
			if prev.TransportProfileUri == ep.TransportProfileUri {
				seen = true
				break
			}
		}
		if seen {
			continue
		}
		if n < 63 && slices.Contains(wanted, ep.TransportProfileUri) {
			mask |= 1 << n
		}
		n++
	}
	return mask
}

// hostOf returns the host of an opc.tcp URL ("opc.tcp://host:port/path"), without
// brackets for IPv6, or "" when there is none. It slices url and does not allocate.
func hostOf(url string) string {
	i := strings.Index(url, "://")
	if i < 0 {
		return ""
	}
	rest := url[i+3:]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		rest = rest[:j]
	}
	if strings.HasPrefix(rest, "[") {
		if j := strings.IndexByte(rest, ']'); j > 0 {
			return rest[1:j]
		}
		return ""
	}
	if j := strings.LastIndexByte(rest, ':'); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// knownHost returns host when it is one of hosts (case-insensitive), else "".
func knownHost(hosts []string, host string) string {
	for _, h := range hosts {
		if strings.EqualFold(h, host) {
			return host
		}
	}
	return ""
}

// withHost returns url with its host replaced by host.
func withHost(url, host string) string {
	old := hostOf(url)
	if old == "" {
		return url
	}
	i := strings.Index(url, old)
	if strings.Contains(host, ":") && !strings.HasPrefix(url[i-1:], "[") {
		host = "[" + host + "]"
	}
	return url[:i] + host + url[i+len(old):]
}

func withHosts(urls []string, host string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = withHost(u, host)
	}
	return out
}
