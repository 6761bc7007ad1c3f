package server

import (
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/ua/id"
	"uastack.dev/services/server/internal/config"
)

// Roles granted by how a session authenticated (Part 3 §4.9.2). The slices are shared
// by every Principal that gets them; nobody modifies them.
var (
	anonymousRoles     = []codec.NodeId{codec.NewNumericNodeId(0, id.WellKnownRole_Anonymous)}
	authenticatedRoles = []codec.NodeId{codec.NewNumericNodeId(0, id.WellKnownRole_AuthenticatedUser)}
)

// rolesOf returns the well-known roles of p: Anonymous for an anonymous session;
// AuthenticatedUser for any user, plus the roles configured for a user name
// (security.users[].roles). The result must not be modified.
func (s *Server) rolesOf(p nodemgr.Principal) []codec.NodeId {
	if p.Anonymous {
		return anonymousRoles
	}
	if p.UserName != "" {
		for _, u := range s.cfg.Security.Users {
			if u.Name != p.UserName || len(u.Roles) == 0 {
				continue
			}
			roles := append(make([]codec.NodeId, 0, 1+len(u.Roles)), authenticatedRoles...)
			for _, name := range u.Roles {
				// Validate has refused unknown names.
				if r, ok := config.RoleID(name); ok {
					roles = append(roles, codec.NewNumericNodeId(0, r))
				}
			}
			return roles
		}
	}
	return authenticatedRoles
}
