package config

import "uastack.dev/pkg/ua/id"

// roles are the well-known roles a user may be granted by name (Part 3 §4.9.2), with
// their NodeIds in namespace 0. Anonymous and AuthenticatedUser are not listed: the
// server grants them by how a session authenticated.
var roles = []struct {
	name string
	id   uint32
}{
	{"Observer", id.WellKnownRole_Observer},
	{"Operator", id.WellKnownRole_Operator},
	{"Engineer", id.WellKnownRole_Engineer},
	{"Supervisor", id.WellKnownRole_Supervisor},
	{"ConfigureAdmin", id.WellKnownRole_ConfigureAdmin},
	{"SecurityAdmin", id.WellKnownRole_SecurityAdmin},
}

// RoleID returns the numeric NodeId (namespace 0) of the well-known role name, which
// is case-sensitive as in the specification.
func RoleID(name string) (uint32, bool) {
	for _, r := range roles {
		if r.name == name {
			return r.id, true
		}
	}
	return 0, false
}

// RoleNames returns the role names a User may list, in a fixed order.
func RoleNames() []string {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = r.name
	}
	return names
}
