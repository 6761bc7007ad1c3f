package pki

import (
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// rejectedWriter copies refused certificates to rejected/certs on its own
// goroutine, so that a validation never waits for the disk. The queue is
// bounded; when it is full a copy is dropped (and logged at debug level).
type rejectedWriter struct {
	dir   string
	max   int
	log   *slog.Logger
	queue chan *x509.Certificate
}

func newRejectedWriter(dir string, max int, log *slog.Logger) *rejectedWriter {
	return &rejectedWriter{
		dir:   dir,
		max:   max,
		log:   log,
		queue: make(chan *x509.Certificate, 32),
	}
}

// enqueue schedules a copy of c; it never blocks.
func (w *rejectedWriter) enqueue(c *x509.Certificate) {
	select {
	case w.queue <- c:
	default:
		w.log.Debug("pki: rejected-certificate queue full, copy dropped", "subject", c.Subject.String())
	}
}

func (w *rejectedWriter) run(done <-chan struct{}) {
	for {
		select {
		case c := <-w.queue:
			w.write(c)
		case <-done:
			for {
				select {
				case c := <-w.queue:
					w.write(c)
				default:
					return
				}
			}
		}
	}
}

func (w *rejectedWriter) write(c *x509.Certificate) {
	name := filepath.Join(w.dir, fileName(c))
	if _, err := os.Stat(name); err == nil {
		now := time.Now()
		_ = os.Chtimes(name, now, now) // keep recently seen certificates longest
		return
	}
	if err := writeFileAtomic(name, c.Raw, 0o644); err != nil {
		w.log.Warn("pki: cannot copy rejected certificate", "file", name, "err", err)
		return
	}
	w.prune()
}

// prune removes the oldest files until at most max remain.
func (w *rejectedWriter) prune() {
	es, err := os.ReadDir(w.dir)
	if err != nil || len(es) <= w.max {
		return
	}
	type file struct {
		name string
		mod  time.Time
	}
	files := make([]file, 0, len(es))
	for _, e := range es {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, file{e.Name(), info.ModTime()})
	}
	slices.SortFunc(files, func(a, b file) int { return a.mod.Compare(b.mod) })
	for len(files) > w.max {
		if err := os.Remove(filepath.Join(w.dir, files[0].name)); err != nil {
			w.log.Warn("pki: cannot prune rejected store", "file", files[0].name, "err", err)
		}
		files = files[1:]
	}
}

// writeFileAtomic writes data to a temporary file in the same folder and
// renames it into place, so readers never see half a certificate or key.
func writeFileAtomic(name string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, name)
}
