package config

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
	yamlv3 "go.yaml.in/yaml/v3"
)

// EnvPrefix starts every environment variable the server reads.
const EnvPrefix = "UASTACK_"

// EnvConfigFile names the YAML file when --config is not given.
const EnvConfigFile = EnvPrefix + "CONFIG"

// namedFlags are the flags that set one key each, in the order of the usage
// text; each flag's help ends with its key.
var namedFlags = []struct{ name, key, help string }{
	{"endpoint", "endpoint.endpointUrl", "endpoint URL advertised to clients"},
	{"listen", "endpoint.listenAddress", "TCP address to listen on"},
	{"pki", "security.pkiDir", "PKI directory"},
	{"log-level", "observability.logLevel", "debug, info, warn or error"},
	{"log-format", "observability.logFormat", "text or json"},
	{"metrics-addr", "observability.metricsAddr", "HTTP address of /metrics and /debug/pprof/"},
}

// NewFlagSet returns the server's command-line flags, for Load and for
// printing usage. Parse errors are returned, not printed.
func NewFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("uastack-server", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.String("config", "", "YAML configuration file (default: $"+EnvConfigFile+")")
	for _, f := range namedFlags {
		fs.String(f.name, "", f.help+" ("+f.key+")")
	}
	fs.StringArray("set", nil, "set any key, e.g. --set limits.maxSessionCount=500 (repeatable)")
	return fs
}

// Load builds the configuration from the built-in defaults, the YAML file,
// the UASTACK_ variables in environ and the flags in args, each overriding
// the one before (see the package doc), and validates it. args are the
// command-line arguments without the program name (os.Args[1:]); environ is
// in the form of os.Environ ("KEY=value"); nil means none.
//
// All errors are reported together: unknown keys and removed settings (each
// named, with its source), then, when the values could be decoded, every failed check of
// [Config.Validate]. -h or --help returns an error wrapping pflag.ErrHelp.
// On success, short policy names are replaced by their URIs.
func Load(args, environ []string) (*Config, error) {
	fs := NewFlagSet()
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("flags: unexpected argument %q", fs.Arg(0))
	}

	keys := knownKeys()
	ko := koanf.New(".")
	if err := ko.Load(structs.Provider(Default(), "koanf"), nil); err != nil {
		return nil, fmt.Errorf("defaults: %w", err)
	}

	var errs []error

	// 2. The YAML file.
	path, _ := fs.GetString("config")
	if path == "" {
		path = lookupEnv(environ, EnvConfigFile)
	}
	if path != "" {
		fk := koanf.New(".")
		if err := fk.Load(file.Provider(path), yaml.Parser()); err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
		for _, k := range fk.Keys() {
			if _, ok := keys.exact[k]; !ok {
				errs = append(errs, fmt.Errorf("config file %s: %s", path, keys.unknown(k)))
			}
		}
		if err := ko.Merge(fk); err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
	}

	// 3. UASTACK_ environment variables.
	envProvider := env.Provider(".", env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, value string) (string, any) {
			if name == EnvConfigFile {
				return "", nil
			}
			lower := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "_", "."))
			key, ok := keys.fold[lower]
			if section, _, _ := strings.Cut(lower, "."); !ok && !keys.sections[section] {
				// Not the server's: another uastack program's variable (uacli's
				// UASTACK_PASSWORD, the tests' UASTACK_NPM_CACHE).
				return "", nil
			}
			if msg, removed := keys.removedMessage(lower); removed {
				errs = append(errs, fmt.Errorf("environment %s: %s", name, msg))
				return "", nil
			}
			if !ok {
				errs = append(errs, fmt.Errorf("environment %s: unknown key %q (the rule: drop %s, \"_\" separates levels, case is ignored)", name, lower, EnvPrefix))
				return "", nil
			}
			v, err := keys.parseValue(key, value)
			if err != nil {
				errs = append(errs, fmt.Errorf("environment %s: %w", name, err))
				return "", nil
			}
			return key, v
		},
	})
	if err := ko.Load(envProvider, nil); err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}

	// 4. Flags: the named ones, then every --set in order.
	flagProvider := posflag.ProviderWithFlag(fs, ".", ko, func(f *pflag.Flag) (string, any) {
		if !f.Changed {
			return "", nil
		}
		for _, nf := range namedFlags {
			if nf.name == f.Name {
				return nf.key, f.Value.String()
			}
		}
		return "", nil
	})
	if err := ko.Load(flagProvider, nil); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}
	sets, _ := fs.GetStringArray("set")
	for _, kv := range sets {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("--set %s: want key=value", kv))
			continue
		}
		key, ok := keys.fold[strings.ToLower(strings.TrimSpace(name))]
		if !ok {
			errs = append(errs, fmt.Errorf("--set: %s", keys.unknown(name)))
			continue
		}
		v, err := keys.parseValue(key, value)
		if err != nil {
			errs = append(errs, fmt.Errorf("--set %s: %w", name, err))
			continue
		}
		if err := ko.Load(confmap.Provider(map[string]any{key: v}, "."), nil); err != nil {
			return nil, fmt.Errorf("--set %s: %w", name, err)
		}
	}

	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	cfg := &Config{}
	if err := unmarshal(ko, cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.normalize()
	return cfg, nil
}

func lookupEnv(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func unmarshal(ko *koanf.Koanf, cfg *Config) error {
	return ko.UnmarshalWithConf("", cfg, koanf.UnmarshalConf{
		DecoderConfig: &mapstructure.DecoderConfig{
			DecodeHook:       mapstructure.ComposeDecodeHookFunc(durationHook),
			WeaklyTypedInput: true,
			ErrorUnused:      true, // unknown keys inside list entries
			TagName:          "koanf",
		},
	})
}

var durationType = reflect.TypeFor[time.Duration]()

// durationHook reads "30s"-style durations and rejects bare numbers, which
// mapstructure would otherwise take as nanoseconds.
func durationHook(_, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch v := data.(type) {
	case time.Duration:
		return v, nil
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("want a duration with a unit such as \"30s\" or \"5m\", got %q", v)
		}
		return d, nil
	default:
		if reflect.ValueOf(data).IsZero() {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("want a duration with a unit such as \"30s\" or \"5m\", got the bare number %v", data)
	}
}

// removedKeys are settings the server no longer accepts, each with the
// reason. Setting one is an error that names it and says why, so that a
// configuration written for an older server is corrected rather than told
// only that the key is unknown.
var removedKeys = map[string]string{
	"limits.decoupleHeldPublishRequests": "a held Publish never holds a request worker in this server (it is parked on its session), so there is nothing to decouple",
}

// keySet is every leaf key of Config with its Go type.
type keySet struct {
	exact    map[string]reflect.Type // key -> type of the field
	fold     map[string]string       // lower-case key -> key
	sections map[string]bool         // lower-case first level of every key
	removed  map[string]string       // lower-case key -> key, of removedKeys
}

func knownKeys() keySet {
	ks := keySet{exact: map[string]reflect.Type{}, fold: map[string]string{}, sections: map[string]bool{}, removed: map[string]string{}}
	for k := range removedKeys {
		ks.removed[strings.ToLower(k)] = k
	}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			key := prefix + f.Tag.Get("koanf")
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				walk(key+".", f.Type)
				continue
			}
			ks.exact[key] = f.Type
			ks.fold[strings.ToLower(key)] = key
			section, _, _ := strings.Cut(strings.ToLower(key), ".")
			ks.sections[section] = true
		}
	}
	walk("", reflect.TypeFor[Config]())
	return ks
}

// removedMessage says why key (in any case) is refused when it names a
// removed setting.
func (ks keySet) removedMessage(key string) (string, bool) {
	k, ok := ks.removed[strings.ToLower(strings.TrimSpace(key))]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%q is no longer a setting: %s; remove it", k, removedKeys[k]), true
}

// unknown describes an unknown key: why it is refused when it names a removed
// setting, or the known key it may be a misspelling of when only the case
// differs.
func (ks keySet) unknown(key string) string {
	if msg, ok := ks.removedMessage(key); ok {
		return msg
	}
	if k, ok := ks.fold[strings.ToLower(key)]; ok {
		return fmt.Sprintf("unknown key %q (did you mean %q? keys are case-sensitive)", key, k)
	}
	// A key under a known group, or a group used as a value.
	return fmt.Sprintf("unknown key %q", key)
}

// parseValue turns an environment or --set string into the value for key: a
// list setting takes a YAML flow sequence (or, for a list of strings, a
// comma-separated value); everything else stays a string for the decoder.
func (ks keySet) parseValue(key, value string) (any, error) {
	t := ks.exact[key]
	if t.Kind() != reflect.Slice {
		return value, nil
	}
	trimmed := strings.TrimSpace(value)
	if t.Elem().Kind() == reflect.String && !strings.HasPrefix(trimmed, "[") {
		if trimmed == "" {
			return []any{}, nil
		}
		var out []any
		for s := range strings.SplitSeq(trimmed, ",") {
			out = append(out, strings.TrimSpace(s))
		}
		return out, nil
	}
	var out []any
	if err := yamlv3.Unmarshal([]byte(trimmed), &out); err != nil {
		return nil, fmt.Errorf("%s: want a YAML list such as [a, b] or [{k: v}]: %w", key, err)
	}
	return out, nil
}

// normalize replaces short policy names by their URIs and empty optional
// lists by nil, as in Default.
func (c *Config) normalize() {
	if len(c.Security.Users) == 0 {
		c.Security.Users = nil
	}
	if len(c.AddressSpace.NodeManagers) == 0 {
		c.AddressSpace.NodeManagers = nil
	}
	if len(c.AddressSpace.Nodesets) == 0 {
		c.AddressSpace.Nodesets = nil
	}
	if len(c.Limits.TrustedOwners) == 0 {
		c.Limits.TrustedOwners = nil
	}
	for i := range c.Security.SecurityPolicies {
		p := &c.Security.SecurityPolicies[i]
		if uri, ok := PolicyURI(p.Policy); ok {
			p.Policy = uri
		}
	}
	for i := range c.Security.UserTokenPolicies {
		p := &c.Security.UserTokenPolicies[i]
		if uri, ok := PolicyURI(p.SecurityPolicy); ok && p.SecurityPolicy != "" {
			p.SecurityPolicy = uri
		}
	}
}
