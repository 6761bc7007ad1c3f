package procwire

import (
	"context"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// HCLog returns an hclog.Logger that logs into l, for go-plugin's own messages (a
// process that exited, a plugin that did not stop gracefully). The logger named mute
// (and those below it) logs nothing: go-plugin logs a plugin's stderr through the
// logger named after the plugin's file, and the host reads that stderr itself, so that
// each line lands once, with its level and attributes. The level is l's: SetLevel does
// nothing.
func HCLog(l *slog.Logger, mute string) hclog.Logger {
	return &hcLogger{l: l, mute: mute}
}

// hcLogger adapts slog to hclog.
type hcLogger struct {
	l       *slog.Logger
	name    string
	mute    string
	muted   bool
	implied []any
}

// slogLevel maps an hclog level to slog's; Trace is below Debug.
func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (h *hcLogger) Log(level hclog.Level, msg string, args ...any) {
	if h.muted || level == hclog.Off {
		return
	}
	sl := slogLevel(level)
	ctx := context.Background()
	if !h.l.Enabled(ctx, sl) {
		return
	}
	args = renamePlugin(args)
	if h.name != "" {
		args = append(args, "logger", h.name)
	}
	h.l.Log(ctx, sl, msg, args...)
}

func (h *hcLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hcLogger) enabled(level hclog.Level) bool {
	return !h.muted && h.l.Enabled(context.Background(), slogLevel(level))
}

func (h *hcLogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hcLogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hcLogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hcLogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hcLogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *hcLogger) ImpliedArgs() []any { return h.implied }

func (h *hcLogger) With(args ...any) hclog.Logger {
	args = renamePlugin(args)
	c := *h
	c.l = h.l.With(args...)
	c.implied = append(append([]any(nil), h.implied...), args...)
	return &c
}

func (h *hcLogger) Name() string { return h.name }

func (h *hcLogger) Named(name string) hclog.Logger {
	if h.name != "" {
		return h.ResetNamed(h.name + "." + name)
	}
	return h.ResetNamed(name)
}

func (h *hcLogger) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	c.muted = h.muted || (h.mute != "" && name == h.mute)
	return &c
}

func (h *hcLogger) SetLevel(hclog.Level) {}

// GetLevel returns the least level that logs, or Off for the muted logger (go-plugin
// then skips parsing the plugin's stderr).
func (h *hcLogger) GetLevel() hclog.Level {
	if h.muted {
		return hclog.Off
	}
	for _, level := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if h.enabled(level) {
			return level
		}
	}
	return hclog.Off
}

func (h *hcLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hcLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	if h.muted {
		return io.Discard
	}
	return slog.NewLogLogger(h.l.Handler(), slog.LevelInfo).Writer()
}

// renamePlugin renames go-plugin's "plugin" attribute (the executable's path) to "path":
// the host's logger names the plugin under "plugin" already.
func renamePlugin(args []any) []any {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == "plugin" {
			args = append([]any(nil), args...)
			args[i] = "path"
		}
	}
	return args
}
