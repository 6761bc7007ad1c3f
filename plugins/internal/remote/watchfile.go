package remote

import (
	"context"
	"os"
	"time"
)

// fileState is what tells a replaced file apart: its size, modification time and inode
// (a file moved into place keeps the time it was written, but has a new inode).
type fileState struct {
	size    int64
	modTime time.Time
	sys     any
}

func statFile(path string) (fileState, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileState{}, false
	}
	return fileState{size: fi.Size(), modTime: fi.ModTime(), sys: inode(fi)}, true
}

// watchFile reloads the guests when the plugin's file is replaced, until Close. A change
// counts once the file has stayed the same for one more look, so that a file still
// being written is not loaded half-way; a file that is gone is waited for.
func (m *Manager) watchFile(last fileState) {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.WatchEvery)
	defer t.Stop()
	var seen fileState // the changed state last looked at
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		now, ok := statFile(m.cfg.Watch)
		if !ok || now == last {
			seen = fileState{}
			continue
		}
		if now != seen {
			seen = now // changed: look once more
			continue
		}
		last, seen = now, fileState{}
		m.cfg.Logger.Info("plugin: the file was replaced; reloading", "file", m.cfg.Watch)
		ctx, cancel := context.WithTimeout(m.ctx, m.cfg.CallTimeout)
		if err := m.Reload(ctx); err != nil {
			m.cfg.Logger.Error("plugin: reload failed; the running guests serve on", "file", m.cfg.Watch, "err", err)
		}
		cancel()
	}
}
