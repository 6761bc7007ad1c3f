package policy

import (
	"fmt"
	"slices"
)

// builtin lists every SecurityPolicy this stack implements, strongest last.
// It is the one place to add a policy.
var builtin = []Policy{
	None,
	Basic128Rsa15,
	Basic256,
	Basic256Sha256,
	Aes128Sha256RsaOaep,
	Aes256Sha256RsaPss,
}

// Registry maps SecurityPolicy URIs to policies. It is immutable after
// NewRegistry and safe for concurrent use.
type Registry struct {
	list  []Policy
	byURI map[string]Policy
}

// NewRegistry returns a registry of the given policies in the given order.
// A nil policy, an empty URI or a URI registered twice is an error.
func NewRegistry(policies ...Policy) (*Registry, error) {
	r := &Registry{byURI: make(map[string]Policy, len(policies))}
	for i, p := range policies {
		if p == nil {
			return nil, fmt.Errorf("policy: entry %d is nil", i)
		}
		uri := p.Info().URI
		if uri == "" {
			return nil, fmt.Errorf("policy: entry %d has no URI", i)
		}
		if _, dup := r.byURI[uri]; dup {
			return nil, fmt.Errorf("policy: %s registered twice", uri)
		}
		r.byURI[uri] = p
		r.list = append(r.list, p)
	}
	return r, nil
}

// Lookup returns the policy with the given URI.
func (r *Registry) Lookup(uri string) (Policy, bool) {
	p, ok := r.byURI[uri]
	return p, ok
}

// All returns the registered policies in registration order; the caller
// owns the returned slice.
func (r *Registry) All() []Policy { return slices.Clone(r.list) }

var defaultRegistry = mustRegistry(builtin...)

func mustRegistry(policies ...Policy) *Registry {
	r, err := NewRegistry(policies...)
	if err != nil {
		panic(err)
	}
	return r
}

// Lookup returns the built-in policy with the given URI.
func Lookup(uri string) (Policy, bool) { return defaultRegistry.Lookup(uri) }

// All returns the built-in policies, None first and strongest last.
func All() []Policy { return defaultRegistry.All() }
