package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
	"github.com/stretchr/testify/require"
)

// flattenAttrs maps the dotted path of every non-group attribute to its value.
func flattenAttrs(prefix string, attrs []slog.Attr, out map[string]slog.Value) map[string]slog.Value {
	for _, a := range attrs {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindGroup {
			flattenAttrs(prefix+a.Key+".", v.Group(), out)
			continue
		}
		out[prefix+a.Key] = v
	}
	return out
}

// TestEffectiveShowsEverySetting: every leaf setting, as koanf flattens the struct,
// appears in Effective under its koanf path with its value (scalars), its entries (lists)
// or its count (log:"count"), and nothing but the runtime group is added.
func TestEffectiveShowsEverySetting(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Security.Users = []User{{Name: "alice", PasswordHash: testHash(t), Roles: []string{"Operator"}}}
	cfg.AddressSpace.NodeManagers = []NodeManager{{Name: "plc", Type: NodeManagerProcess, NamespaceURI: "urn:plc", Path: "plc.bin"}}
	ko := koanf.New(".")
	require.NoError(t, ko.Load(structs.Provider(cfg, "koanf"), nil))
	require.Greater(t, len(ko.Keys()), 50)

	got := flattenAttrs("", Effective(cfg), map[string]slog.Value{})
	for _, key := range ko.Keys() {
		v, ok := got[key]
		require.True(t, ok, "%s is not in the effective configuration", key)
		delete(got, key)
		switch want := ko.Get(key).(type) {
		case int:
			require.Equal(t, slog.KindInt64, v.Kind(), key)
			require.Equal(t, int64(want), v.Int64(), key)
		case bool:
			require.Equal(t, slog.KindBool, v.Kind(), key)
			require.Equal(t, want, v.Bool(), key)
		case string:
			require.Equal(t, slog.KindString, v.Kind(), key)
			require.Equal(t, want, v.String(), key)
		case time.Duration:
			require.Equal(t, slog.KindDuration, v.Kind(), key)
			require.Equal(t, want, v.Duration(), key)
		case float64:
			require.Equal(t, slog.KindFloat64, v.Kind(), key)
			require.Equal(t, want, v.Float64(), key)
		case []string:
			require.Equal(t, want, v.Any(), key)
		case []any:
			if v.Kind() == slog.KindInt64 { // log:"count"
				require.Equal(t, int64(len(want)), v.Int64(), key)
				continue
			}
			require.Len(t, v.Any(), len(want), key)
		default:
			t.Fatalf("%s: setting of type %T not checked here", key, want)
		}
	}
	for key := range got {
		require.True(t, strings.HasPrefix(key, "runtime."), "%s is not a setting", key)
	}

	// The lists of policies and node managers read as before: one summary each.
	eff := flattenAttrs("", Effective(cfg), map[string]slog.Value{})
	require.Equal(t, []any{"None:None", "Basic256Sha256:Sign|SignAndEncrypt", "Aes256_Sha256_RsaPss:Sign|SignAndEncrypt"},
		eff["security.securityPolicies"].Any())
	require.Equal(t, []any{"anonymous", "username:Basic256Sha256", "certificate:Basic256Sha256"},
		eff["security.userTokenPolicies"].Any())
	require.Equal(t, []any{"plc(process)"}, eff["addressSpace.nodeManagers"].Any())
	require.Equal(t, int64(1), eff["security.users"].Int64())
}

// TestEffectiveHidesSecrets: a password hash appears in no output of LogEffective, in
// either handler, and not even with the user's name beside it.
func TestEffectiveHidesSecrets(t *testing.T) {
	t.Parallel()
	cfg := Default()
	hash := testHash(t)
	cfg.Security.Users = []User{{Name: "alice", PasswordHash: hash}, {Name: "bob", PasswordHash: hash, Roles: []string{"Engineer"}}}
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var out bytes.Buffer
		LogEffective(slog.New(h(&out)), cfg)
		require.Contains(t, out.String(), "effective configuration")
		require.Contains(t, out.String(), "users")
		require.NotContains(t, out.String(), hash)
		require.NotContains(t, out.String(), hash[7:], "not even the hash without its prefix")
		require.NotContains(t, out.String(), "alice")
	}
}

// TestEffectiveLogTags: the log tags are honoured wherever they are, also inside the
// entries of a list of a type without a LogValue method, which Effective shows field by
// field under the koanf names.
func TestEffectiveLogTags(t *testing.T) {
	t.Parallel()
	type account struct {
		Name  string        `koanf:"name"`
		Key   string        `koanf:"key" log:"secret"`
		Unset string        `koanf:"unset" log:"secret"`
		Wait  time.Duration `koanf:"wait"`
		Tags  []string      `koanf:"tags" log:"count"`
	}
	type settings struct {
		Accounts []account `koanf:"accounts"`
		Token    string    `koanf:"token" log:"secret"`
		Peers    []string  `koanf:"peers" log:"count"`
		internal string
	}
	s := settings{
		Accounts: []account{{Name: "a", Key: "k3y", Wait: time.Second, Tags: []string{"x", "y"}}},
		Token:    "t0ken",
		Peers:    []string{"p1", "p2", "p3"},
		internal: "hidden",
	}
	got := flattenAttrs("", settingAttrs(reflect.ValueOf(s)), map[string]slog.Value{})
	require.Equal(t, map[string]slog.Value{
		"accounts": slog.AnyValue([]any{map[string]any{"name": "a", "key": "[redacted]", "unset": "", "wait": "1s", "tags": int64(2)}}),
		"token":    slog.StringValue("[redacted]"),
		"peers":    slog.IntValue(3),
	}, got)
}

// TestSecretsAreTagged: a setting whose name says it holds a secret carries
// log:"secret", so that Effective never shows it; a new one without the tag fails here,
// and so does a misspelt log tag, which Effective would ignore.
func TestSecretsAreTagged(t *testing.T) {
	t.Parallel()
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		for typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ == durationType {
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			key := path + f.Tag.Get("koanf")
			name := strings.ToLower(f.Tag.Get("koanf"))
			if tag, ok := f.Tag.Lookup("log"); ok {
				require.Contains(t, []string{logSecret, logCount}, tag, "%s: unknown log tag, which would show the setting in full", key)
			}
			for _, word := range []string{"password", "secret", "privatekey", "credential", "passphrase"} {
				if strings.Contains(name, word) {
					require.Equal(t, logSecret, f.Tag.Get("log"), "%s looks like a secret but is not tagged log:\"secret\"", key)
				}
			}
			walk(key+".", f.Type)
		}
	}
	walk("", reflect.TypeFor[Config]())
	f, _ := reflect.TypeFor[User]().FieldByName("PasswordHash")
	require.Equal(t, logSecret, f.Tag.Get("log"))
}

// logJSON runs LogEffective into a JSON handler and returns the records.
func logJSON(t *testing.T, c *Config) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	LogEffective(slog.New(slog.NewJSONHandler(&buf, nil)), c)
	var recs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		recs = append(recs, rec)
	}
	return recs
}

func warnings(recs []map[string]any) map[string]string {
	out := map[string]string{}
	for _, r := range recs {
		if r["level"] == "WARN" {
			out[r["setting"].(string)] = r["warning"].(string)
		}
	}
	return out
}

func TestInsecureSettingsWarn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(c *Config)
		want   map[string]string // setting -> substring of the warning
	}{
		{"defaults: None and anonymous", func(*Config) {}, map[string]string{
			"security.securityPolicies[0]":  "SecurityPolicy None is offered",
			"security.userTokenPolicies[0]": "anonymous logins are accepted",
			"security.users":                "no users are configured",
		}},
		{"secure", func(c *Config) {
			c.Security.SecurityPolicies = c.Security.SecurityPolicies[1:]
			c.Security.UserTokenPolicies = []UserTokenPolicy{{Type: TokenCertificate}}
		}, map[string]string{}},
		{"auto-accept", func(c *Config) {
			c.Security.SecurityPolicies = c.Security.SecurityPolicies[1:]
			c.Security.UserTokenPolicies = []UserTokenPolicy{{Type: TokenCertificate}}
			c.Security.AutoAcceptUntrusted = true
		}, map[string]string{"security.autoAcceptUntrusted": "every untrusted client certificate is accepted"}},
		{"clear-text passwords and no lockout", func(c *Config) {
			c.Security.UserTokenPolicies = []UserTokenPolicy{{Type: TokenUsername}}
			c.Security.Users = []User{{Name: "a", PasswordHash: "$2a$04$"}}
			c.Security.MaxFailedAuthenticationAttempts = 0
		}, map[string]string{
			"security.securityPolicies[0]":                 "SecurityPolicy None is offered",
			"security.userTokenPolicies[0].securityPolicy": "passwords can cross the network in clear text",
			"security.maxFailedAuthenticationAttempts":     "0 disables the lockout",
		}},
		{"two username policies and no users: one warning", func(c *Config) {
			c.Security.SecurityPolicies = c.Security.SecurityPolicies[1:]
			c.Security.UserTokenPolicies = []UserTokenPolicy{
				{Type: TokenUsername, SecurityPolicy: "Basic256Sha256"},
				{Type: TokenUsername, SecurityPolicy: "Aes256_Sha256_RsaPss"},
			}
		}, map[string]string{"security.users": "no users are configured"}},
		{"deprecated policy and unlimited items", func(c *Config) {
			c.Security.SecurityPolicies = []SecurityPolicy{{Policy: "Basic128Rsa15", Modes: []string{ModeSign}}}
			c.Security.UserTokenPolicies = []UserTokenPolicy{{Type: TokenCertificate}}
			c.Limits.MaxMonitoredItemCount = 0
			c.Limits.MaxMonitoredItemsPerSubscription = 0
		}, map[string]string{
			"security.securityPolicies[0]":            "Basic128Rsa15 is deprecated",
			"limits.maxMonitoredItemCount":            "0 is no limit",
			"limits.maxMonitoredItemsPerSubscription": "0 is no limit",
		}},
		{"transport deadlines off", func(c *Config) {
			c.Security.SecurityPolicies = c.Security.SecurityPolicies[1:]
			c.Security.UserTokenPolicies = []UserTokenPolicy{{Type: TokenCertificate}}
			c.Limits.ChunkTimeout, c.Limits.AssemblyTimeout, c.Limits.WriteTimeout = 0, 0, 0
		}, map[string]string{
			"limits.chunkTimeout":    "0 is no bound",
			"limits.assemblyTimeout": "0 is no bound",
			"limits.writeTimeout":    "0 is no bound",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tt.change(c)
			recs := logJSON(t, c)
			got := warnings(recs)
			require.Len(t, got, len(tt.want), "%v", got)
			require.Len(t, recs, 1+len(got), "one record per warned setting, after the configuration")
			for k, sub := range tt.want {
				require.Contains(t, got[k], sub, k)
			}
		})
	}
}

func TestLogEffective(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Limits.MaxSessionCount = 1234
	c.Security.Users = []User{{Name: "alice", PasswordHash: testHash(t)}}
	recs := logJSON(t, c)
	require.Equal(t, "INFO", recs[0]["level"])
	require.Equal(t, "effective configuration", recs[0]["msg"])

	rt := recs[0]["runtime"].(map[string]any)
	require.InDelta(t, float64(runtime.GOMAXPROCS(0)), rt["GOMAXPROCS"], 0)
	require.InDelta(t, float64(runtime.NumCPU()), rt["NumCPU"], 0)
	require.Equal(t, runtime.Version(), rt["go"])
	require.NotEmpty(t, rt["GOGC"])
	require.NotEmpty(t, rt["GOMEMLIMIT"])

	limits := recs[0]["limits"].(map[string]any)
	require.InDelta(t, 1234, limits["maxSessionCount"], 0)
	require.InDelta(t, 100, limits["maxRequestThreadCount"], 0)
	require.InDelta(t, 10, limits["minRequestThreadCount"], 0)
	require.InDelta(t, 200, limits["maxQueuedRequestCount"], 0)
	require.Contains(t, recs[0], "operationLimits")
	require.Contains(t, recs[0], "encoding")

	sec := recs[0]["security"].(map[string]any)
	require.Equal(t, []any{"None:None", "Basic256Sha256:Sign|SignAndEncrypt", "Aes256_Sha256_RsaPss:Sign|SignAndEncrypt"}, sec["securityPolicies"])
	require.InDelta(t, 1, sec["users"], 0)

	var all bytes.Buffer
	LogEffective(slog.New(slog.NewTextHandler(&all, nil)), c)
	require.NotContains(t, all.String(), c.Security.Users[0].PasswordHash, "hashes are never logged")
}
