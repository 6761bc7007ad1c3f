package config

import "time"

// History is where the server keeps the history of variables with Historizing set and
// of the events of its notifiers (Part 11; HistoryRead and HistoryUpdate).
type History struct {
	// Store is "memory" (the default: bounded, lost on restart), "durable" (an embedded
	// database at Path that survives a restart) or "off" (no history: HistoryRead and
	// HistoryUpdate answer BadHistoryOperationUnsupported).
	Store string `koanf:"store"`
	// Path is the folder of the durable store; required with store "durable".
	Path string `koanf:"path"`
	// MaxValuesPerNode and MaxValues bound the memory store (the oldest value goes
	// first; 0: no bound). Defaults 10,000 per node and 1,000,000 in all.
	MaxValuesPerNode int `koanf:"maxValuesPerNode"`
	MaxValues        int `koanf:"maxValues"`
	// MaxEventsPerNotifier bounds the events the memory store keeps per notifier.
	// Default 10,000.
	MaxEventsPerNotifier int `koanf:"maxEventsPerNotifier"`
	// SyncInterval is how often the durable store makes the recorded values durable;
	// a crash loses at most this much. Default 1s.
	SyncInterval time.Duration `koanf:"syncInterval"`
	// Retention drops what the durable store holds older than this; 0 (the default)
	// keeps everything.
	Retention time.Duration `koanf:"retention"`
	// MaxContinuationPoints bounds the HistoryRead continuation points a session holds
	// (MaxHistoryContinuationPoints). Default 10.
	MaxContinuationPoints int `koanf:"maxContinuationPoints"`
	// MaxValuesPerRead bounds the values one node returns per HistoryRead; more are
	// left for a continuation point. Default 10,000.
	MaxValuesPerRead int `koanf:"maxValuesPerRead"`
	// MaxValuesPerResponse bounds the values of one HistoryRead answer across its nodes:
	// each node's page is at most this divided by the nodes read, and a processed or
	// at-time read asking for more is refused (BadTooManyOperations). Default 200,000.
	MaxValuesPerResponse int `koanf:"maxValuesPerResponse"`
	// MaxNodesPerRead and MaxNodesPerUpdate bound the nodes of one HistoryRead and
	// one HistoryUpdate (OperationLimits MaxNodesPerHistoryReadData/Events and
	// MaxNodesPerHistoryUpdateData/Events). Default 1,000 and 100.
	MaxNodesPerRead   int `koanf:"maxNodesPerRead"`
	MaxNodesPerUpdate int `koanf:"maxNodesPerUpdate"`
}

// History stores.
const (
	HistoryMemory  = "memory"
	HistoryDurable = "durable"
	HistoryOff     = "off"
)

func defaultHistory() History {
	return History{Store: HistoryMemory, MaxValuesPerNode: 10_000, MaxValues: 1_000_000, MaxEventsPerNotifier: 10_000,
		SyncInterval: time.Second, MaxContinuationPoints: 10, MaxValuesPerRead: 10_000, MaxValuesPerResponse: 200_000, MaxNodesPerRead: 1000, MaxNodesPerUpdate: 100}
}

func (c *Config) validateHistory(ps *problems) {
	h := c.History
	ps.oneOf("history.store", h.Store, HistoryMemory, HistoryDurable, HistoryOff)
	if h.Store == HistoryDurable && h.Path == "" {
		ps.add("history.path", "is required with history.store durable")
	}
	ps.atLeast("history.maxValuesPerNode", h.MaxValuesPerNode, 0)
	ps.atLeast("history.maxValues", h.MaxValues, 0)
	ps.atLeast("history.maxEventsPerNotifier", h.MaxEventsPerNotifier, 0)
	ps.positive("history.syncInterval", h.SyncInterval)
	ps.notNegative("history.retention", h.Retention)
	ps.atLeast("history.maxContinuationPoints", h.MaxContinuationPoints, 1)
	ps.atLeast("history.maxValuesPerRead", h.MaxValuesPerRead, 1)
	ps.atLeast("history.maxValuesPerResponse", h.MaxValuesPerResponse, 1)
	ps.atLeast("history.maxNodesPerRead", h.MaxNodesPerRead, 1)
	ps.atLeast("history.maxNodesPerUpdate", h.MaxNodesPerUpdate, 1)
}
