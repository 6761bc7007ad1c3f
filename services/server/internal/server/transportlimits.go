package server

import (
	"time"

	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/services/server/internal/config"
)

// uacpConfig is the connection protocol configuration of cfg.
func uacpConfig(cfg *config.Config) uacp.ServerConfig {
	return uacp.ServerConfig{
		Limits: uacp.Limits{
			ReceiveBufferSize: uint32(cfg.Encoding.ReceiveBufferSize),
			SendBufferSize:    uint32(cfg.Encoding.SendBufferSize),
			MaxMessageSize:    uint32(cfg.Encoding.MaxMessageSize),
			MaxChunkCount:     uint32(cfg.Encoding.MaxChunkCount),
		},
		// transport deadlines
		HelloTimeout: cfg.Limits.HandshakeTimeout,
		ChunkTimeout: noBound(cfg.Limits.ChunkTimeout),
		WriteTimeout: noBound(cfg.Limits.WriteTimeout),
	}
}

// reassemblyBudget is the budget of limits.maxRetainedBytes, uasc's default for a
// configuration that names none.
func reassemblyBudget(cfg *config.Config) *uasc.Budget {
	if cfg.Limits.MaxRetainedBytes <= 0 {
		return uasc.NewBudget(uasc.DefaultBudget)
	}
	return uasc.NewBudget(int64(cfg.Limits.MaxRetainedBytes))
}

// retainedPerChannel is one channel's share of the reassembly budget: the
// limits.maxRetainedBytesPerChannel in force (under SharedOnly the whole budget), uasc's
// default for a configuration that names none.
func retainedPerChannel(cfg *config.Config) int {
	if share := cfg.Limits.RetainedPerChannelInForce(); share > 0 {
		return share
	}
	if cfg.Limits.SharedOnly() {
		return uasc.DefaultBudget
	}
	return uasc.DefaultMaxRetainedPerChannel
}

// maxRequestMessageSize is the largest request the channels accept, as their Acknowledge
// offers it: encoding.maxMessageSize, or a channel's share of the reassembly budget when
// that is smaller.
func maxRequestMessageSize(cfg *config.Config) uint32 {
	return uint32(min(cfg.Encoding.MaxMessageSize, retainedPerChannel(cfg)))
}

// noBound turns a setting's 0, no bound, into the transport's negative; zero there
// means its default.
func noBound(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
