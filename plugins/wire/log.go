package wire

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
)

// A plugin logs in the JSON lines of slog.JSONHandler: one object per record with
// "level" and "msg", and its attributes as further keys ("time" is the host's
// business and dropped). The WASM guest hands each line to the host's log function; a
// plugin process writes them to its stderr. Lines that are not such an object are
// kept as the message of an Info record, so that a panic's trace still reaches the log.

// MaxLogLine bounds one log line; the rest is cut.
const MaxLogLine = 8 << 10

// ParseLog reads one log line of a plugin.
func ParseLog(line []byte) (level slog.Level, msg string, attrs []slog.Attr) {
	if len(line) > MaxLogLine {
		line = line[:MaxLogLine]
	}
	var rec map[string]any
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &rec) != nil {
		return slog.LevelInfo, strings.TrimRight(string(line), "\r\n"), nil
	}
	level = slog.LevelInfo
	if s, ok := rec["level"].(string); ok {
		_ = level.UnmarshalText([]byte(s)) // an unknown level stays Info
	}
	msg, _ = rec["msg"].(string)
	for k, v := range rec {
		switch k {
		case "level", "msg", "time":
			continue
		}
		attrs = append(attrs, slog.Any(k, v))
	}
	// Map order is random: sort for stable output.
	slices.SortFunc(attrs, func(a, b slog.Attr) int { return strings.Compare(a.Key, b.Key) })
	return level, msg, attrs
}
