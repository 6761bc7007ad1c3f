package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// withMetrics returns sets with an observability.metricsAddr on a free loopback port
// added unless sets has one, and the address.
func withMetrics(sets []string) ([]string, string, error) {
	if addr := metricsAddr(sets); addr != "" {
		return sets, addr, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return append(sets, "observability.metricsAddr="+addr), addr, nil
}

// gcCycles returns the garbage collections the server at addr has completed, from its
// /metrics.
func gcCycles(ctx context.Context, addr string) (int64, error) {
	body, err := get(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "uastack_go_gc_cycles_total") {
			v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			return int64(v), err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s/metrics: no uastack_go_gc_cycles_total", addr)
}

// metricsAddr returns the observability.metricsAddr among sets, or "".
func metricsAddr(sets []string) string {
	addr := ""
	for _, kv := range sets {
		if k, v, _ := strings.Cut(kv, "="); k == "observability.metricsAddr" {
			addr = v
		}
	}
	return addr
}

// profileStorm fetches the server's memory statistics from its /debug/pprof/ at addr into
// dir as the storm begins, and its execution trace, CPU profile, heap, memory statistics
// and goroutines at a moment in it, so that what the established sessions wait
// behind and where the memory goes can be seen. Failures are logged, not fatal.
func profileStorm(ctx context.Context, addr, dir, name string, at time.Duration, logw io.Writer) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(logw, "profile:", err)
		return
	}
	prefix := strings.ReplaceAll(name, " ", "-")
	for _, p := range []struct{ file, path string }{
		{"heap-start.pprof", "heap?gc=1"},
		{"heap-start.txt", "heap?debug=1"},
	} {
		if err := fetch(ctx, "http://"+addr+"/debug/pprof/"+p.path, filepath.Join(dir, prefix+"."+p.file)); err != nil {
			fmt.Fprintln(logw, "profile:", err)
		}
	}
	sleep(ctx, at)
	for _, p := range []struct{ file, path string }{
		{"trace", "trace?seconds=2"},
		{"cpu.pprof", "profile?seconds=5"},
		{"heap.pprof", "heap?gc=1"},
		{"heap.txt", "heap?debug=1"},
		{"goroutine.txt", "goroutine?debug=1"},
	} {
		if err := fetch(ctx, "http://"+addr+"/debug/pprof/"+p.path, filepath.Join(dir, prefix+"."+p.file)); err != nil {
			fmt.Fprintln(logw, "profile:", err)
		}
	}
}

// fetch writes what url answers into file.
func fetch(ctx context.Context, url, file string) error {
	body, err := get(ctx, url)
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// get returns the body of url's answer, which the caller closes; an answer other than
// 200 OK is an error.
func get(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return resp.Body, nil
}
