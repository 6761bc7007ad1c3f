package config

import (
	"context"
	"log/slog"
	"math"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Effective returns the configuration in force as log attributes: a
// "runtime" group (Go version, GOMAXPROCS, NumCPU, GOGC, GOMEMLIMIT, as the
// running process sees them, after the environment and any SetGCPercent or
// SetMemoryLimit) and then every setting of [Config], read from the struct:
// one group per koanf-tagged struct, one attribute per setting under its
// koanf name, a list of a type with a LogValue method as its summaries (e.g.
// "Basic256Sha256:Sign|SignAndEncrypt"). The log tags of the struct decide
// what is never shown: a `log:"secret"` setting appears only as "[redacted]"
// (or "" when empty), a `log:"count"` list only as its length. Password
// hashes are therefore never included, only the number of users.
func Effective(cfg *Config) []slog.Attr {
	return append([]slog.Attr{runtimeGroup()}, settingAttrs(reflect.ValueOf(cfg).Elem())...)
}

func runtimeGroup() slog.Attr {
	return slog.Group("runtime",
		slog.String("go", runtime.Version()),
		slog.String("os", runtime.GOOS+"/"+runtime.GOARCH),
		slog.Int("GOMAXPROCS", runtime.GOMAXPROCS(0)),
		slog.Int("NumCPU", runtime.NumCPU()),
		slog.String("GOGC", gcPercent()),
		slog.String("GOMEMLIMIT", memoryLimit()),
		slog.String("GODEBUG", os.Getenv("GODEBUG")),
	)
}

// The values of the log tag on a setting.
const (
	logSecret = "secret" // never shown: "[redacted]" when set, "" when empty
	logCount  = "count"  // a list shown as its number of entries
)

// redacted stands in for a secret setting that is set.
const redacted = "[redacted]"

var logValuerType = reflect.TypeFor[slog.LogValuer]()

// settingAttrs is one attribute per exported field of the struct v, named by
// its koanf tag, in the order of the struct.
func settingAttrs(v reflect.Value) []slog.Attr {
	t := v.Type()
	attrs := make([]slog.Attr, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		attrs = append(attrs, settingAttr(f, v.Field(i)))
	}
	return attrs
}

func settingAttr(f reflect.StructField, v reflect.Value) slog.Attr {
	key := f.Tag.Get("koanf")
	if lv, ok := byLogTag(f, v); ok {
		return slog.Attr{Key: key, Value: lv}
	}
	switch {
	case v.Type().Implements(logValuerType):
		return slog.Any(key, v.Interface())
	case v.Kind() == reflect.Struct:
		return slog.Attr{Key: key, Value: slog.GroupValue(settingAttrs(v)...)}
	case v.Kind() == reflect.Slice && (v.Type().Elem().Implements(logValuerType) || v.Type().Elem().Kind() == reflect.Struct):
		return slog.Any(key, plainValue(v))
	default:
		// Scalars keep their kind (a time.Duration stays a duration); lists of
		// scalars are logged as they are.
		return slog.Any(key, v.Interface())
	}
}

// byLogTag is what the log tag of f makes of its value v, when f has one.
func byLogTag(f reflect.StructField, v reflect.Value) (slog.Value, bool) {
	switch f.Tag.Get("log") {
	case logSecret:
		if v.IsZero() {
			return slog.StringValue(""), true
		}
		return slog.StringValue(redacted), true
	case logCount:
		return slog.IntValue(v.Len()), true
	}
	return slog.Value{}, false
}

// plainValue is v as plain data a log handler can print, for entries of a
// list: a LogValuer is its resolved value, a struct a map by koanf name with
// its log tags honoured, a duration its text.
func plainValue(v reflect.Value) any {
	if v.Type().Implements(logValuerType) {
		return v.Interface().(slog.LogValuer).LogValue().Resolve().Any()
	}
	switch v.Kind() {
	case reflect.Struct:
		m := make(map[string]any, v.NumField())
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if lv, ok := byLogTag(f, v.Field(i)); ok {
				m[f.Tag.Get("koanf")] = lv.Any()
			} else {
				m[f.Tag.Get("koanf")] = plainValue(v.Field(i))
			}
		}
		return m
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range v.Len() {
			out[i] = plainValue(v.Index(i))
		}
		return out
	default:
		if v.Type() == durationType {
			return v.Interface().(time.Duration).String()
		}
		return v.Interface()
	}
}

// LogEffective logs the effective configuration at start-up: one Info record
// "effective configuration" with the attributes of [Effective], then one Warn
// record "insecure configuration" per [Config.Warnings] entry, with the
// attributes "setting" and "warning".
func LogEffective(logger *slog.Logger, cfg *Config) {
	ctx := context.Background()
	logger.LogAttrs(ctx, slog.LevelInfo, "effective configuration", Effective(cfg)...)
	for _, w := range cfg.Warnings() {
		logger.LogAttrs(ctx, slog.LevelWarn, "insecure configuration",
			slog.String("setting", w.Key), slog.String("warning", w.Message))
	}
}

// gcPercent reads the GC percentage in force without changing it for longer
// than the two calls (the GC is briefly switched off between them).
func gcPercent() string {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	if p < 0 {
		return "off"
	}
	return strconv.Itoa(p)
}

func memoryLimit() string {
	l := debug.SetMemoryLimit(-1) // a negative limit reads without changing
	if l == math.MaxInt64 {
		return "off"
	}
	return strconv.FormatInt(l, 10)
}

// LogValue is the policy's short name and its modes, e.g.
// "Basic256Sha256:Sign|SignAndEncrypt", as [Effective] shows it.
func (p SecurityPolicy) LogValue() slog.Value {
	name := p.Policy
	if info, ok := policyInfo(p.Policy); ok {
		name = info.Name
	}
	return slog.StringValue(name + ":" + strings.Join(p.Modes, "|"))
}

// LogValue is the token type and, when set, the short name of its policy,
// e.g. "username:Basic256Sha256", as [Effective] shows it.
func (t UserTokenPolicy) LogValue() slog.Value {
	s := t.Type
	if t.SecurityPolicy != "" {
		if info, ok := policyInfo(t.SecurityPolicy); ok {
			s += ":" + info.Name
		} else {
			s += ":" + t.SecurityPolicy
		}
	}
	return slog.StringValue(s)
}

// LogValue is the name and the type, e.g. "plc(process)", as [Effective]
// shows it; the options, which may hold a device's credentials, are left out.
func (n NodeManager) LogValue() slog.Value {
	return slog.StringValue(n.Name + "(" + n.Type + ")")
}
