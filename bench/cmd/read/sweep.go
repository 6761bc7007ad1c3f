package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"uastack.dev/bench/internal/child"
	"uastack.dev/bench/internal/drive"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/client"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// parseSweep reads "1,2,5,10" into client counts.
func parseSweep(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-sweep: %q is not a positive client count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// sweep measures uastack None and the None echo ceiling at each client count (with
// o.outstanding Reads in flight per client) and adds a chart of Reads/s over clients.
func sweep(ctx context.Context, o options, r *report.Report, srv *uaserver.Server, ident *uaserver.Identity, reqLen, respLen int, respBody []byte, prog *report.Progress) error {
	echo, err := child.Start(ctx, "echo", hex.EncodeToString(responseFrame(respBody, respLen)))
	if err != nil {
		return err
	}
	defer echo.Stop()
	targets := []struct {
		name string
		pid  int
		dial drive.Dial
	}{
		{"uastack None", srv.Pid(), pkgClient(srv.URL, policy.URINone, ua.MessageSecurityModeNone, client.Certificate(ident.DER, ident.Key),
			client.Application(ident.URI, "uastack bench"), client.TrustStore(ident.PKI))},
		{"echo ceiling", echo.Pid(), echoDial(echo.Addr, reqLen, len(respBody))},
	}
	chart := report.Chart{Name: "read-sweep", Title: fmt.Sprintf("Reads/s by clients, %d outstanding each, None", o.outstanding),
		XLabel: "clients", YLabel: "Reads/s"}
	for _, t := range targets {
		s := report.Series{Name: t.name}
		for _, n := range o.sweep {
			prog.Stage(fmt.Sprintf("sweep %s × %d", t.name, n))
			res, err := drive.Run(ctx, t.dial, drive.Options{Clients: n, Outstanding: o.outstanding, Warmup: o.warmup,
				Window: o.duration, ServerPid: t.pid, Progress: prog})
			if err != nil {
				return fmt.Errorf("sweep %s × %d: %w", t.name, n, err)
			}
			s.Points = append(s.Points, report.Point{X: float64(n), Y: res.PerSecond()})
			r.Add(report.Row{Name: fmt.Sprintf("sweep: %s, %d clients", t.name, n), Values: []report.Value{
				{Name: colRate, Value: res.PerSecond(), Unit: "1/s"},
				{Name: colServerCPU, Value: res.ServerMicros(), Unit: "µs"},
				{Name: colClientCPU, Value: res.ClientMicros(), Unit: "µs"},
			}})
		}
		chart.Series = append(chart.Series, s)
	}
	r.AddChart(chart)
	return nil
}
