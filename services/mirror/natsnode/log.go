package natsnode

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// natsLogger is nats-server's Logger over a slog.Logger (which may be nil: nothing is
// written). It also keeps the first fatal error, which is how an embedded nats-server
// reports that it could not start (a port in use, a store it cannot open): Start
// returns it.
type natsLogger struct {
	log *slog.Logger

	mu    sync.Mutex // guards fatal
	fatal string
}

func (l *natsLogger) enabled(level slog.Level) bool {
	return l.log != nil && l.log.Enabled(context.Background(), level)
}

// logf formats only when the line is written.
func (l *natsLogger) logf(level slog.Level, format string, v []any) {
	if !l.enabled(level) {
		return
	}
	l.log.Log(context.Background(), level, fmt.Sprintf(format, v...), "component", "nats")
}

// failure is the first fatal error logged, or "".
func (l *natsLogger) failure() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

// Noticef logs at info.
func (l *natsLogger) Noticef(format string, v ...any) { l.logf(slog.LevelInfo, format, v) }

// Warnf logs at warn.
func (l *natsLogger) Warnf(format string, v ...any) { l.logf(slog.LevelWarn, format, v) }

// Errorf logs at warn: NATS reports a route to a stopped peer as an error, and in a
// redundant set a stopped peer is routine.
func (l *natsLogger) Errorf(format string, v ...any) { l.logf(slog.LevelWarn, format, v) }

// Fatalf logs at error and keeps the message. Unlike NATS's own logger it does not
// exit the process: nats-server returns after it, and so does Start.
func (l *natsLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	if l.fatal == "" {
		l.fatal = msg
	}
	l.mu.Unlock()
	if l.enabled(slog.LevelError) {
		l.log.Error(msg, "component", "nats")
	}
}

// Debugf logs at debug.
func (l *natsLogger) Debugf(format string, v ...any) { l.logf(slog.LevelDebug, format, v) }

// Tracef logs at debug; Start never turns NATS's protocol tracing on.
func (l *natsLogger) Tracef(format string, v ...any) { l.logf(slog.LevelDebug, format, v) }
