package server_test

import (
	"crypto/rsa"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/history"
	"uastack.dev/pkg/ua/ns0"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/servertest"
)

// The interoperability tests of issue 4 (interop_gopcua_test.go, interop_nodeopcua_test.go)
// run one server per client with these limits, small enough that a test reaches them.
const (
	interopMaxRead   = 100 // OperationLimits.MaxNodesPerRead
	interopMaxWrite  = 50  // OperationLimits.MaxNodesPerWrite
	interopMaxBrowse = 10  // OperationLimits.MaxNodesPerBrowse
	interopMaxCPs    = 10  // Limits.MaxBrowseContinuationPoints (the default)
	interopPerNode   = 5   // RequestedMaxReferencesPerNode of the full browse
	interopUser      = "alice"
	interopPassword  = "s3cret"
)

// interopIdentity is what a client needs for the secured channels and X509 login.
type interopIdentity struct {
	appDER, userDER []byte
	appKey, userKey *rsa.PrivateKey
}

// newInteropIdentity makes a client application certificate and a user certificate.
func newInteropIdentity(t *testing.T) interopIdentity {
	t.Helper()
	var id interopIdentity
	id.appDER, id.appKey = clientIdentity(t)
	// One key for both certificates keeps the test light; the server checks the user
	// signature against the user certificate either way.
	id.userDER, id.userKey = userIdentity(t, "interop user", id.appKey)
	return id
}

// interopServer starts a server that trusts the certificates of id (and extra ones) and
// knows the user alice, with the interop operation limits. It does not auto-accept: with
// security.autoAcceptUntrusted on, the server refuses every X509 identity token.
func interopServer(t *testing.T, id interopIdentity, extra ...[]byte) *servertest.Server {
	t.Helper()
	hash, err := cheapHash(interopPassword)
	require.NoError(t, err)
	return servertest.New(t, servertest.Options{Configure: func(c *config.Config) {
		c.Security.PKIDir = trustedPKI(t, append([][]byte{id.appDER, id.userDER}, extra...)...)
		c.Security.Users = []config.User{{Name: interopUser, PasswordHash: hash}}
		c.OperationLimits.MaxNodesPerRead = interopMaxRead
		c.OperationLimits.MaxNodesPerWrite = interopMaxWrite
		c.OperationLimits.MaxNodesPerBrowse = interopMaxBrowse
		c.Limits.MaxBrowseContinuationPoints = interopMaxCPs
	}})
}

// ns0Hierarchy returns the nodes of namespace 0 reachable from the Root folder (i=84)
// through forward HierarchicalReferences (i=33) and their subtypes, as gopcua prints
// node ids ("i=85"), computed from the generated tables alone: an oracle independent of
// the server's Browse.
func ns0Hierarchy(t *testing.T) map[string]bool {
	t.Helper()
	hierarchical := map[uint32]bool{}
	var isHierarchical func(id uint32, depth int) bool
	isHierarchical = func(id uint32, depth int) bool {
		if id == 33 {
			return true
		}
		if ok, seen := hierarchical[id]; seen {
			return ok
		}
		n, found := ns0.Lookup(id)
		require.True(t, found, "reference type i=%d not in namespace 0", id)
		require.Less(t, depth, 32, "HasSubtype loop at i=%d", id)
		ok := false
		for _, r := range n.References() {
			if r.ReferenceTypeId == 45 && !r.IsForward { // HasSubtype, to the supertype
				ok = isHierarchical(r.TargetId, depth+1)
				break
			}
		}
		hierarchical[id] = ok
		return ok
	}
	seen := map[uint32]bool{84: true}
	queue := []uint32{84}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		n, ok := ns0.Lookup(id)
		require.True(t, ok, "i=%d not in namespace 0", id)
		for _, r := range n.References() {
			if r.IsForward && !seen[r.TargetId] && isHierarchical(r.ReferenceTypeId, 0) {
				seen[r.TargetId] = true
				queue = append(queue, r.TargetId)
			}
		}
	}
	out := make(map[string]bool, len(seen))
	for id := range seen {
		out[fmt.Sprintf("i=%d", id)] = true
	}
	return out
}

// requireHierarchy checks a visited set from a full browse against the tables: its
// namespace 0 part is exactly ns0Hierarchy, and it holds the demo namespace (index ns)
// with every Scalar_ and Array_ variable and the Add method.
func requireHierarchy(t *testing.T, visited map[string]bool, ns uint16) {
	t.Helper()
	want := ns0Hierarchy(t)
	// The server organizes the aggregates it computes below AggregateFunctions (Part 13
	// §4.2.1.1), which the tables leave unreferenced.
	for _, a := range history.Aggregates {
		want[fmt.Sprintf("i=%d", a.IntID())] = true
	}
	got0 := map[string]bool{}
	var others []string
	for id := range visited {
		if len(id) > 2 && id[:2] == "i=" {
			got0[id] = true
		} else {
			others = append(others, id)
		}
	}
	var missing, extra []string
	for id := range want {
		if !got0[id] {
			missing = append(missing, id)
		}
	}
	for id := range got0 {
		if !want[id] {
			extra = append(extra, id)
		}
	}
	require.Empty(t, missing, "namespace 0 nodes the browse did not reach")
	require.Empty(t, extra, "namespace 0 nodes the browse reached that the tables do not")
	require.Greater(t, len(want), 1000, "namespace 0 hierarchy suspiciously small")
	for _, w := range demoWrites {
		for _, name := range []string{"Demo.Scalar_" + w.typ, "Demo.Array_" + w.typ} {
			require.True(t, visited[fmt.Sprintf("ns=%d;s=%s", ns, name)], "%s not reached (others: %d)", name, len(others))
		}
	}
	require.True(t, visited[fmt.Sprintf("ns=%d;s=Demo.Add", ns)], "Demo.Add not reached")
}
