// Package discovery keeps what FindServers and GetEndpoints answer (Part 4 §5.4.2,
// §5.4.4) as encoded response messages, so that an answer costs a lookup and a copy
// instead of building endpoint, user-token-policy and application descriptions for every
// caller. A server answers its own discovery services from a Cache; the discovery
// service answers for itself and for every server registered with it.
package discovery

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua"
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

// maxKept bounds the encoded answers a Cache keeps per server, and for FindServers. Keys
// derive from what callers send (locales, the host they called), so a full list starts
// over rather than grow. A list this short is searched faster than a map is hashed.
const maxKept = 32

// Cache holds the servers a discovery endpoint answers for and their encoded answers.
// Answers are built on first demand and dropped when a server is set or removed. It is
// safe for concurrent use; an answer takes no lock: readers load an immutable view of
// the servers, and changes, which are rare, replace it.
type Cache struct {
	mu   sync.Mutex // serialises changes
	view atomic.Pointer[view]
}

// view is the servers of a Cache at one generation. It is not changed once published,
// except for the answer lists, which are replaced whole.
type view struct {
	servers map[string]*entry // by the key given to Set
	order   []string          // keys in the order of the first Set
	found   atomic.Pointer[[]kept]
}

// entry is a server and its GetEndpoints answers: one lookup finds both.
type entry struct {
	srv     *Server
	answers atomic.Pointer[[]kept]
}

// kept is an encoded answer and what it answers. A GetEndpoints answer is found again by
// the caller's EndpointUrl as sent, without parsing it: url is that string.
type kept struct {
	url  string
	k    answerKey
	body []byte
}

// findURL returns the body kept in *list for a caller of url, locale and profiles (for
// FindServers answers, url is empty and profiles zero).
func findURL(list *[]kept, url, locale string, profiles uint64) ([]byte, bool) {
	if list == nil {
		return nil, false
	}
	for i := range *list {
		if x := &(*list)[i]; x.url == url && x.k.locale == locale && x.k.profiles == profiles {
			return x.body, true
		}
	}
	return nil, false
}

// find returns the body kept for k in *list.
func find(list *[]kept, k answerKey) ([]byte, bool) {
	if list == nil {
		return nil, false
	}
	for i := range *list {
		if (*list)[i].k == k {
			return (*list)[i].body, true
		}
	}
	return nil, false
}

// answerKey says what varies an answer. Every field is bounded by the servers' own
// data except locale, which is a caller's string: maxKept bounds those.
type answerKey struct {
	findServers bool
	server      string // GetEndpoints: the key of the server asked about
	host        string // the caller's host when it is one of Server.Hosts
	locale      string // the first requested locale id
	profiles    uint64 // GetEndpoints: which of the server's transport profiles are wanted
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	c := &Cache{}
	c.view.Store(&view{servers: map[string]*entry{}})
	return c
}

// change publishes a copy of the current view, without answers, after edit changed it.
func (c *Cache) change(edit func(v *view)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.view.Load()
	v := &view{servers: make(map[string]*entry, len(old.servers)+1), order: slices.Clone(old.order)}
	for k, e := range old.servers {
		v.servers[k] = &entry{srv: e.srv}
	}
	edit(v)
	c.view.Store(v)
}

// Set adds or replaces the server under key. The Cache keeps srv; the caller must not
// change it afterwards.
func (c *Cache) Set(key string, srv *Server) {
	c.change(func(v *view) {
		if _, ok := v.servers[key]; !ok {
			v.order = append(v.order, key)
		}
		v.servers[key] = &entry{srv: srv}
	})
}

// Remove drops the server under key.
func (c *Cache) Remove(key string) {
	if _, ok := c.Get(key); !ok {
		return
	}
	c.change(func(v *view) {
		delete(v.servers, key)
		v.order = slices.DeleteFunc(v.order, func(k string) bool { return k == key })
	})
}

// Get returns the server under key.
func (c *Cache) Get(key string) (*Server, bool) {
	e, ok := c.view.Load().servers[key]
	if !ok {
		return nil, false
	}
	return e.srv, true
}

// Keys returns the keys of every server, in the order they were first set.
func (c *Cache) Keys() []string {
	return slices.Clone(c.view.Load().order)
}

// GetEndpoints answers m for the server under key: its endpoints whose transport
// profile m asks for, with the caller's host where the server is reached by it. When
// other servers share its ApplicationUri (a redundant set), their endpoints are in the
// answer too, the servers ordered by ServiceLevel, highest first, so that a client
// taking the first suitable endpoint takes the healthiest node. It returns nil when
// there is no such server. Release the Answer once it is sent.
func (c *Cache) GetEndpoints(key string, m *ua.GetEndpointsRequest, now codec.DateTime) *Answer {
	v := c.view.Load()
	e, ok := v.servers[key]
	if !ok {
		return nil
	}
	srv := e.srv
	locale, profiles := firstLocale(m.LocaleIds), profileMask(srv, m.ProfileUris)
	list := e.answers.Load()
	body, ok := findURL(list, m.EndpointUrl, locale, profiles)
	if !ok {
		k := answerKey{server: key, host: knownHost(srv.Hosts, hostOf(m.EndpointUrl)), locale: locale, profiles: profiles}
		// Another URL may have asked for the same answer (another port or path): share it.
		if body, ok = find(list, k); !ok {
			body = encodeEndpoints(v.redundantSet(key, srv), srv, k)
		}
		body = c.store(v, &e.answers, kept{url: m.EndpointUrl, k: k, body: body})
	}
	return newAnswer(typeGetEndpoints, body, m.RequestHeader.RequestHandle, now)
}

// redundantSet returns srv and the other servers with its ApplicationUri, highest
// ServiceLevel first, srv first among equals.
func (v *view) redundantSet(key string, srv *Server) []*Server {
	set := []*Server{srv}
	for _, k := range v.order {
		if other := v.servers[k].srv; k != key && other.Application.ApplicationUri == srv.Application.ApplicationUri {
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
	v := c.view.Load()
	if len(m.ServerUris) > 0 {
		// A filtered answer is not kept: the filter is the caller's and rarely repeats.
		return newAnswer(typeFindServers, v.encodeServers(k, m.ServerUris), m.RequestHeader.RequestHandle, now)
	}
	body, ok := find(v.found.Load(), k)
	if !ok {
		body = c.store(v, &v.found, kept{k: k, body: v.encodeServers(k, nil)})
	}
	return newAnswer(typeFindServers, body, m.RequestHeader.RequestHandle, now)
}

// store keeps x, built from view v, in list (one of v's) and returns its body; or returns
// the body a concurrent caller kept first. A body built from a view that a change has
// replaced since is returned to its caller but not kept. Lists are copied on write:
// readers scan them without a lock.
func (c *Cache) store(v *view, list *atomic.Pointer[[]kept], x kept) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.view.Load() != v {
		return x.body
	}
	cur := list.Load()
	if old, ok := findURL(cur, x.url, x.k.locale, x.k.profiles); ok {
		return old
	}
	var next []kept
	if cur != nil && len(*cur) < maxKept {
		next = append(make([]kept, 0, len(*cur)+1), *cur...)
	}
	next = append(next, x)
	list.Store(&next)
	return x.body
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
// when uris is nil).
func (v *view) encodeServers(k answerKey, uris []string) []byte {
	resp := ua.FindServersResponse{ResponseHeader: ua.ResponseHeader{ServiceResult: status.Good}}
	var list []*Server
	for _, key := range v.order {
		srv := v.servers[key].srv
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
		if h == host {
			return host
		}
	}
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
