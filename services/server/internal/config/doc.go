// Package config holds the server's configuration: the settings, their
// defaults, how they are loaded and how they are checked.
//
// # Sources and precedence
//
// [Load] merges four sources, each overriding the one before it:
//
//  1. built-in defaults ([Default]);
//  2. a YAML file, named by the --config flag or, without it, by the
//     UASTACK_CONFIG environment variable (no file is read when neither is set);
//  3. UASTACK_ environment variables;
//  4. command-line flags: --endpoint, --listen, --pki, --log-level,
//     --log-format, --metrics-addr and the generic, repeatable
//     --set key=value.
//
// A later source replaces a list as a whole (securityPolicies in the YAML
// file replaces the default list; it is not appended to).
//
// # Keys
//
// Keys are camelCase and nested by group, keeping the names OPC UA
// integrators know from the .NET stack: limits.maxSessionCount,
// operationLimits.maxNodesPerRead, encoding.maxMessageSize, and so on. The
// YAML file uses them as written. An unknown key in the file, in a UASTACK_
// variable or in --set is an error that names the key: a typo is never
// silently ignored. A UASTACK_ variable whose first level names none of the
// server's sections (application, endpoint, security, limits, ...) belongs to
// another uastack program (uacli's UASTACK_PASSWORD) and is left alone.
//
// A setting the server no longer has is refused from every source with the
// reason, not merely as unknown: limits.decoupleHeldPublishRequests is gone
// because a held Publish never holds a request worker in this server (it is
// parked on its session), so there is nothing to decouple.
//
// # Environment variables
//
// The rule: strip UASTACK_, then every "_" separates two levels of the key,
// and the match against the known keys ignores case. Keys never contain "_",
// so the rule is unambiguous:
//
//	UASTACK_LIMITS_MAXSESSIONCOUNT=500        -> limits.maxSessionCount
//	UASTACK_ENDPOINT_ENDPOINTURL=opc.tcp://h:4840 -> endpoint.endpointUrl
//	UASTACK_OBSERVABILITY_LOGLEVEL=debug      -> observability.logLevel
//
// UASTACK_CONFIG is the one exception: it names the YAML file. --set uses the
// same key syntax with "." (limits.maxSessionCount=500), also ignoring case.
//
// A list-valued setting takes a YAML flow sequence, both in a variable and in
// --set: UASTACK_ENDPOINT_HOSTNAMES='[a.example, b.example]' or
// --set 'security.securityPolicies=[{policy: Basic256Sha256, modes: [SignAndEncrypt]}]'.
// A list of strings also takes a comma-separated value (a.example,b.example).
//
// Durations are written with a unit ("30s", "5m", "1h"); a bare number is
// rejected rather than read as nanoseconds.
//
// # Secure by default
//
// The defaults accept anonymous users and offer SecurityPolicy None because
// the server is meant to be reachable by any client out of the box; both are
// explicit entries in the default lists, and [Config.Warnings] (logged by
// [LogEffective]) reports them, together with every other insecure setting.
// A zero value never means None or "trust all".
package config
