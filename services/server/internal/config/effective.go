package config

import (
	"context"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Effective returns the configuration in force as log attributes: a
// "runtime" group (Go version, GOMAXPROCS, NumCPU, GOGC, GOMEMLIMIT, as the
// running process sees them, after the environment and any SetGCPercent or
// SetMemoryLimit) and one group per configuration group. Password hashes are
// never included, only the number of users.
func Effective(cfg *Config) []slog.Attr {
	return []slog.Attr{
		slog.Group("runtime",
			slog.String("go", runtime.Version()),
			slog.String("os", runtime.GOOS+"/"+runtime.GOARCH),
			slog.Int("GOMAXPROCS", runtime.GOMAXPROCS(0)),
			slog.Int("NumCPU", runtime.NumCPU()),
			slog.String("GOGC", gcPercent()),
			slog.String("GOMEMLIMIT", memoryLimit()),
			slog.String("GODEBUG", os.Getenv("GODEBUG")),
		),
		slog.Group("application",
			slog.String("applicationUri", cfg.Application.ApplicationURI),
			slog.String("applicationName", cfg.Application.ApplicationName),
			slog.String("productUri", cfg.Application.ProductURI),
		),
		slog.Group("endpoint",
			slog.String("endpointUrl", cfg.Endpoint.EndpointURL),
			slog.String("listenAddress", cfg.Endpoint.ListenAddress),
			slog.Any("hostnames", cfg.Endpoint.Hostnames),
		),
		slog.Group("security",
			slog.String("pkiDir", cfg.Security.PKIDir),
			slog.Any("securityPolicies", policySummary(cfg.Security.SecurityPolicies)),
			slog.Any("userTokenPolicies", tokenSummary(cfg.Security.UserTokenPolicies)),
			slog.Int("users", len(cfg.Security.Users)),
			slog.Bool("autoAcceptUntrusted", cfg.Security.AutoAcceptUntrusted),
			slog.Int("maxFailedAuthenticationAttempts", cfg.Security.MaxFailedAuthenticationAttempts),
			slog.Duration("failedAuthenticationWindow", cfg.Security.FailedAuthenticationWindow),
			slog.Duration("failedAuthenticationLockout", cfg.Security.FailedAuthenticationLockout),
		),
		slog.Group("limits",
			slog.Int("maxSessionCount", cfg.Limits.MaxSessionCount),
			slog.Int("maxChannelCount", cfg.Limits.MaxChannelCount),
			slog.Int("maxRequestThreadCount", cfg.Limits.MaxRequestThreadCount),
			slog.Int("minRequestThreadCount", cfg.Limits.MinRequestThreadCount),
			slog.Int("maxQueuedRequestCount", cfg.Limits.MaxQueuedRequestCount),
			slog.Int("maxSubscriptionCount", cfg.Limits.MaxSubscriptionCount),
			slog.Int("maxPublishRequestCount", cfg.Limits.MaxPublishRequestCount),
			slog.Int("maxMonitoredItemCount", cfg.Limits.MaxMonitoredItemCount),
			slog.Int("maxMonitoredItemsPerSubscription", cfg.Limits.MaxMonitoredItemsPerSubscription),
			slog.Int("maxBrowseContinuationPoints", cfg.Limits.MaxBrowseContinuationPoints),
			slog.Duration("minSessionTimeout", cfg.Limits.MinSessionTimeout),
			slog.Duration("maxSessionTimeout", cfg.Limits.MaxSessionTimeout),
			slog.Duration("minTokenLifetime", cfg.Limits.MinTokenLifetime),
			slog.Duration("maxTokenLifetime", cfg.Limits.MaxTokenLifetime),
		),
		subscriptionsGroup(cfg),
		slog.Group("operationLimits",
			slog.Int("maxNodesPerRead", cfg.OperationLimits.MaxNodesPerRead),
			slog.Int("maxNodesPerWrite", cfg.OperationLimits.MaxNodesPerWrite),
			slog.Int("maxNodesPerBrowse", cfg.OperationLimits.MaxNodesPerBrowse),
			slog.Int("maxNodesPerMethodCall", cfg.OperationLimits.MaxNodesPerMethodCall),
			slog.Int("maxNodesPerTranslateBrowsePathsToNodeIds", cfg.OperationLimits.MaxNodesPerTranslateBrowsePathsToNodeIds),
			slog.Int("maxNodesPerRegisterNodes", cfg.OperationLimits.MaxNodesPerRegisterNodes),
			slog.Int("maxMonitoredItemsPerCall", cfg.OperationLimits.MaxMonitoredItemsPerCall),
		),
		slog.Group("encoding",
			slog.Int("maxStringLength", cfg.Encoding.MaxStringLength),
			slog.Int("maxByteStringLength", cfg.Encoding.MaxByteStringLength),
			slog.Int("maxArrayLength", cfg.Encoding.MaxArrayLength),
			slog.Int("maxMessageSize", cfg.Encoding.MaxMessageSize),
			slog.Int("maxChunkCount", cfg.Encoding.MaxChunkCount),
			slog.Int("receiveBufferSize", cfg.Encoding.ReceiveBufferSize),
			slog.Int("sendBufferSize", cfg.Encoding.SendBufferSize),
		),
		slog.Group("addressSpace",
			slog.Bool("demoNamespace", cfg.AddressSpace.DemoNamespace),
			slog.Any("nodeManagers", nodeManagerSummary(cfg.AddressSpace.NodeManagers)),
			slog.Int("simulation.count", cfg.AddressSpace.Simulation.Count),
			slog.Duration("simulation.interval", cfg.AddressSpace.Simulation.Interval),
		),
		slog.Group("discovery",
			slog.String("discoveryUrl", cfg.Discovery.DiscoveryURL),
			slog.Duration("registerInterval", cfg.Discovery.RegisterInterval),
		),
		slog.Group("observability",
			slog.Bool("diagnosticsEnabled", cfg.Observability.DiagnosticsEnabled),
			slog.String("metricsAddr", cfg.Observability.MetricsAddr),
			slog.String("logLevel", cfg.Observability.LogLevel),
			slog.String("logFormat", cfg.Observability.LogFormat),
		),
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

func policySummary(ps []SecurityPolicy) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		name := p.Policy
		if info, ok := policyInfo(p.Policy); ok {
			name = info.Name
		}
		out = append(out, name+":"+strings.Join(p.Modes, "|"))
	}
	return out
}

func tokenSummary(ts []UserTokenPolicy) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		s := t.Type
		if t.SecurityPolicy != "" {
			if info, ok := policyInfo(t.SecurityPolicy); ok {
				s += ":" + info.Name
			} else {
				s += ":" + t.SecurityPolicy
			}
		}
		out = append(out, s)
	}
	return out
}

func nodeManagerSummary(ns []NodeManager) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.Name+"("+n.Type+")")
	}
	return out
}
