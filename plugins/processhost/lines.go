package processhost

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"

	"uastack.dev/plugins/wire"
)

// lines is an io.Writer that logs each line written to it (a plugin's stderr or
// stdout) with wire.ParseLog. Lines that are not JSON log records are logged raw at
// Info, and at Error from a line that starts a panic or a fatal error on.
type lines struct {
	logger *slog.Logger

	mu      sync.Mutex // guards buf, inPanic
	buf     []byte     // the line so far, cut at wire.MaxLogLine
	inPanic bool
}

func newLines(logger *slog.Logger) *lines { return &lines{logger: logger} }

// Write logs every line p completes and keeps the rest for the next Write.
func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if room := wire.MaxLogLine - len(l.buf); len(part) > room {
			part = part[:max(room, 0)]
		}
		l.buf = append(l.buf, part...)
		if i < 0 {
			break
		}
		l.emit()
		p = p[i+1:]
	}
	return n, nil
}

// flush logs a last line that has no newline.
func (l *lines) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.emit()
}

// emit logs the line in buf and empties it. Blank lines carry nothing and are skipped.
func (l *lines) emit() {
	line := bytes.TrimRight(l.buf, "\r")
	l.buf = l.buf[:0]
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	level, msg, attrs := wire.ParseLog(line)
	if line[0] != '{' {
		// A raw line: Go's runtime writes "panic: " or "fatal error: " and then the
		// goroutines' traces, all of it raw.
		if bytes.HasPrefix(line, []byte("panic: ")) || bytes.HasPrefix(line, []byte("fatal error: ")) {
			l.inPanic = true
		}
		if l.inPanic {
			level = slog.LevelError
		}
	}
	l.logger.LogAttrs(context.Background(), level, msg, attrs...)
}

var _ io.Writer = (*lines)(nil)
