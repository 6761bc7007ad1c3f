package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"uastack.dev/bench/internal/report"
)

// Row names of the report. Each row has one value per server configuration, named after
// it: the report reads as a comparison, a column per configuration.
const (
	rowEstablished    = "established sessions"
	rowSetupRate      = "establishment (sessions/s)"
	rowWrites         = "values written, baseline and storm"
	rowDrops          = "sessions with drops"
	rowMissed         = "values missed"
	rowPublishFailed  = "Publish loops failed"
	rowReadBefore     = "Read p99 before (ms)"
	rowReadDuring     = "Read p99 during the storm (ms)"
	rowReadRatio      = "Read p99 during / before"
	rowReadsBefore    = "Reads before"
	rowReadsDuring    = "Reads during the storm"
	rowReadErrors     = "Read errors"
	rowRSSBefore      = "server RSS before, peak (MiB)"
	rowRSSPeak        = "server RSS during the storm, peak (MiB)"
	rowRSSRatio       = "server RSS during / before"
	rowNotesBefore    = "notifications/s before"
	rowNotesDuring    = "notifications/s during the storm"
	rowOrphansRude    = "orphans (rude clients' sessions) when the last rude client was gone"
	rowOrphansLeft    = "orphans left after settling"
	rowOrphansGone    = "orphans gone after (s from the last rude client)"
	rowOrphansEnd     = "sessions above the kept ones at the storm's end"
	rowOrphans        = "sessions above the kept ones after settling"
	rowSettled        = "back to the kept sessions after (s from the storm's end)"
	rowStorm          = "storm, start to last client done (s)"
	rowRudeDone       = "storm, start to last rude client done (s)"
	rowCoopClients    = "cooperative clients"
	rowCoopIn         = "cooperative clients in"
	rowCoopAllIn      = "every cooperative client in after (s)"
	rowCoopP50        = "cooperative arrival to in, p50 (s)"
	rowCoopP99        = "cooperative arrival to in, p99 (s)"
	rowCoopAttempts   = "cooperative attempts (with retries)"
	rowCoopHinted     = "cooperative retries waiting for RetryAfterMs"
	rowRudePlanned    = "rude attempts planned"
	rowRudeFired      = "rude attempts fired"
	rowRudeRate       = "rude attempts/s fired"
	rowRudeUnfired    = "rude attempts not fired: every slot in flight until the window's end"
	rowRudeInFlight   = "rude attempts in flight, peak"
	rowRudeWhole      = "rude whole sessions"
	rowRudeAbandoned  = "rude whole sessions abandoned"
	rowRudeDropOpen   = "rude dropped after OpenSecureChannel"
	rowRudeDropCreate = "rude dropped after CreateSession"
	rowDiagCreated    = "server: sessions created, storm and settling"
	rowDiagRejected   = "server: CreateSession/ActivateSession refused"
	rowDiagTimedOut   = "server: sessions timed out"
	rowDiagAborted    = "server: sessions aborted"
	rowServerBefore   = "server CPU before (% of a core)"
	rowServerDuring   = "server CPU during the storm (% of a core)"
	rowStormCPU       = "storm process CPU (% of a core)"
	rowBenchCPU       = "bench process CPU during the storm (% of a core)"
	rowBaselineGCs    = "server GC cycles in the baseline"
	rowBaselineTook   = "baseline (s)"
	rowReadRude       = "Read p99 while rude clients fire (ms)"
	rowReadTail       = "Read p99 after the last rude client (ms)"
	rowLoadBefore     = "load average before"
	rowLoadDuring     = "load average after the storm"

	prefixRudeRefused = "rude refused: "
	prefixCoopRetried = "cooperative retried after: "
	prefixCoopGaveUp  = "cooperative gave up on: "
)

// metric is one row: its value for an outcome, or false when there is none.
type metric struct {
	name string
	get  func(*outcome) (float64, bool)
}

func always(f func(*outcome) float64) func(*outcome) (float64, bool) {
	return func(r *outcome) (float64, bool) { return f(r), true }
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(b int64) float64        { return float64(b) / (1 << 20) }
func ratio(a, b float64) float64 { return a / max(b, 1e-9) }

func p99(d []time.Duration) time.Duration { return report.Percentiles(d, 0.99)[0] }

func percentOfCore(cpu, wall time.Duration) float64 {
	return 100 * cpu.Seconds() / max(wall.Seconds(), 1e-9)
}

var metrics = []metric{
	{rowEstablished, always(func(r *outcome) float64 { return float64(r.established) })},
	{rowSetupRate, always(func(r *outcome) float64 { return float64(r.established) / max(r.setup.Seconds(), 1e-9) })},
	{rowWrites, always(func(r *outcome) float64 { return float64(r.writes) })},
	{rowDrops, always(func(r *outcome) float64 { return float64(r.dropSessions) })},
	{rowMissed, always(func(r *outcome) float64 { return float64(r.missed) })},
	{rowPublishFailed, always(func(r *outcome) float64 { return float64(r.publishFailed) })},
	{rowReadBefore, always(func(r *outcome) float64 { return ms(p99(r.readsBefore)) })},
	{rowReadDuring, always(func(r *outcome) float64 { return ms(p99(r.readsDuring)) })},
	{rowReadRatio, always(func(r *outcome) float64 { return ratio(ms(p99(r.readsDuring)), ms(p99(r.readsBefore))) })},
	{rowReadRude, func(r *outcome) (float64, bool) { return ms(p99(r.readsRude)), len(r.readsRude) > 0 }},
	{rowReadTail, func(r *outcome) (float64, bool) { return ms(p99(r.readsTail)), len(r.readsTail) > 0 }},
	{rowReadsBefore, always(func(r *outcome) float64 { return float64(len(r.readsBefore)) })},
	{rowReadsDuring, always(func(r *outcome) float64 { return float64(len(r.readsDuring)) })},
	{rowReadErrors, always(func(r *outcome) float64 { return float64(r.readErrors) })},
	{rowRSSBefore, always(func(r *outcome) float64 { return mib(r.rssBefore) })},
	{rowBaselineTook, always(func(r *outcome) float64 { return r.before.Seconds() })},
	{rowBaselineGCs, always(func(r *outcome) float64 { return float64(r.baselineGCs) })},
	{rowRSSPeak, always(func(r *outcome) float64 { return mib(r.rssPeak) })},
	{rowRSSRatio, always(func(r *outcome) float64 { return ratio(float64(r.rssPeak), float64(r.rssBefore)) })},
	{rowNotesBefore, always(func(r *outcome) float64 { return float64(r.notesBefore) / max(r.before.Seconds(), 1e-9) })},
	{rowNotesDuring, always(func(r *outcome) float64 { return float64(r.notesDuring) / max(r.during.Seconds(), 1e-9) })},
	{rowOrphansRude, always(func(r *outcome) float64 { return float64(r.orphans.atRudeEnd) })},
	{rowOrphansLeft, always(func(r *outcome) float64 { return float64(r.orphans.left) })},
	{rowOrphansGone, func(r *outcome) (float64, bool) { return r.orphans.gone.Seconds(), r.orphans.gone >= 0 }},
	{rowOrphansEnd, always(func(r *outcome) float64 { return float64(r.sessionsEnd - r.expected) })},
	{rowOrphans, always(func(r *outcome) float64 { return float64(r.sessionsSettled - r.expected) })},
	{rowSettled, func(r *outcome) (float64, bool) { return r.settled.Seconds(), r.settled >= 0 }},
	{rowStorm, always(func(r *outcome) float64 { return r.storm.Took.Seconds() })},
	{rowRudeDone, always(func(r *outcome) float64 { return r.storm.RudeDone.Seconds() })},
	{rowCoopClients, always(func(r *outcome) float64 { return float64(r.storm.Coop.Clients) })},
	{rowCoopIn, always(func(r *outcome) float64 { return float64(r.storm.Coop.In) })},
	{rowCoopAllIn, func(r *outcome) (float64, bool) {
		c := r.storm.Coop
		return c.AllIn.Seconds(), c.Clients > 0 && c.In == c.Clients
	}},
	{rowCoopP50, func(r *outcome) (float64, bool) {
		return report.Percentiles(r.storm.Coop.Connect, 0.5)[0].Seconds(), len(r.storm.Coop.Connect) > 0
	}},
	{rowCoopP99, func(r *outcome) (float64, bool) {
		return p99(r.storm.Coop.Connect).Seconds(), len(r.storm.Coop.Connect) > 0
	}},
	{rowCoopAttempts, always(func(r *outcome) float64 { return float64(r.storm.Coop.Attempts) })},
	{rowCoopHinted, always(func(r *outcome) float64 { return float64(r.storm.Coop.Hinted) })},
	{rowRudePlanned, always(func(r *outcome) float64 { return float64(r.storm.Rude.Planned) })},
	{rowRudeFired, always(func(r *outcome) float64 { return float64(r.storm.Rude.Fired) })},
	{rowRudeRate, func(r *outcome) (float64, bool) {
		return float64(r.storm.Rude.Fired) / r.storm.Rude.LastFired.Seconds(), r.storm.Rude.LastFired > 0
	}},
	{rowRudeUnfired, always(func(r *outcome) float64 { return float64(r.storm.Rude.Planned - r.storm.Rude.Fired) })},
	{rowRudeInFlight, always(func(r *outcome) float64 { return float64(r.storm.Rude.MaxInFlight) })},
	{rowRudeWhole, always(func(r *outcome) float64 { return float64(r.storm.Rude.Whole) })},
	{rowRudeAbandoned, always(func(r *outcome) float64 { return float64(r.storm.Rude.Abandoned) })},
	{rowRudeDropOpen, always(func(r *outcome) float64 { return float64(r.storm.Rude.DroppedAtOpen) })},
	{rowRudeDropCreate, always(func(r *outcome) float64 { return float64(r.storm.Rude.DroppedAtCreate) })},
	{rowDiagCreated, always(func(r *outcome) float64 { return float64(r.diagAfter.Cumulated - r.diagBefore.Cumulated) })},
	{rowDiagRejected, always(func(r *outcome) float64 { return float64(r.diagAfter.Rejected - r.diagBefore.Rejected) })},
	{rowDiagTimedOut, always(func(r *outcome) float64 { return float64(r.diagAfter.TimedOut - r.diagBefore.TimedOut) })},
	{rowDiagAborted, always(func(r *outcome) float64 { return float64(r.diagAfter.Aborted - r.diagBefore.Aborted) })},
	{rowServerBefore, always(func(r *outcome) float64 { return percentOfCore(r.cpuBefore, r.before) })},
	{rowServerDuring, always(func(r *outcome) float64 { return percentOfCore(r.cpuDuring, r.during) })},
	{rowStormCPU, always(func(r *outcome) float64 { return percentOfCore(r.storm.CPU, r.storm.Took) })},
	{rowBenchCPU, always(func(r *outcome) float64 { return percentOfCore(r.benchCPU, r.during) })},
	{rowLoadBefore, always(func(r *outcome) float64 { return r.loadBefore })},
	{rowLoadDuring, always(func(r *outcome) float64 { return r.loadDuring })},
}

// build makes the report of the outcomes: the rows above, then the refusals by kind, then
// the bars and the configurations as notes. An outcome without a storm (a run that
// failed before it) gives only the set-up rows.
func build(o options, outs []*outcome) *report.Report {
	r := report.New("storm")
	for _, m := range metrics {
		row := report.Row{Name: m.name}
		for _, res := range outs {
			if res.storm == nil && m.name != rowEstablished && m.name != rowSetupRate {
				continue
			}
			if v, ok := m.get(res); ok {
				row.Values = append(row.Values, report.Value{Name: res.cfg.Name, Value: v})
			}
		}
		if len(row.Values) > 0 {
			r.Add(row)
		}
	}
	kinds := func(prefix string, of func(*stormResult) map[string]int) {
		var names []string
		for _, res := range outs {
			if res.storm == nil {
				continue
			}
			for k := range of(res.storm) {
				if !slices.Contains(names, k) {
					names = append(names, k)
				}
			}
		}
		slices.Sort(names)
		for _, k := range names {
			row := report.Row{Name: prefix + k}
			for _, res := range outs {
				if res.storm != nil {
					row.Values = append(row.Values, report.Value{Name: res.cfg.Name, Value: float64(of(res.storm)[k])})
				}
			}
			r.Add(row)
		}
	}
	kinds(prefixRudeRefused, func(s *stormResult) map[string]int { return s.Rude.Refused })
	kinds(prefixCoopRetried, func(s *stormResult) map[string]int { return s.Coop.Refused })
	kinds(prefixCoopGaveUp, func(s *stormResult) map[string]int { return s.Coop.FailedBy })
	for _, res := range outs {
		if res.storm != nil {
			bars(r, res)
		}
	}
	for _, res := range outs {
		r.Note("%s: the server ran with --set %s", res.cfg.Name, strings.Join(res.sets, " --set "))
	}
	r.Note("storm: %d attempts planned within %v: %d cooperative clients of %d applications (pkg/client, Backoff with unbounded attempts, %v deadline) "+
		"and %d rude attempts, at most %d in flight, from %d source addresses; %.0f%% of the rude drop mid-handshake (half once OpenSecureChannel is sent, half after CreateSession), "+
		"%.0f%% of the rude whole sessions are abandoned, a rude attempt gives up after %v, rude sessions ask for a %v timeout; "+
		"the storm process runs with GOMAXPROCS=%d and nice %d; %s on every channel",
		o.attempts, o.within, o.cooperative, o.coopApps, o.coopDeadline, max(o.attempts-o.cooperative, 0), o.inflight, o.rudeSources,
		100*o.dropShare, 100*o.abandonShare, o.rudeTimeout, o.rudeSessionTimeout, o.clientProcs, o.stormNice, o.security)
	r.Note("established: %d sessions of %d applications, %d per source address, one subscription (%v) and one item each; "+
		"%d of them Read every %v; baseline %v at least, and until the server has completed %d GC cycles in it (at most %v); orphans are the rude application's sessions in the server's SessionDiagnosticsArray once the last rude client is gone, "+
		"watched for up to %v, and at the end CurrentSessionCount is back to the kept sessions (the established and the bench's control session)",
		o.sessions, o.apps, o.perSource, o.interval, o.probes, o.probeEvery, o.baseline, baselineCycles, o.baselineMax, o.settle)
	return r
}

// bars notes the bars for one configuration.
func bars(r *report.Report, res *outcome) {
	read := ratio(ms(p99(res.readsDuring)), ms(p99(res.readsBefore)))
	if res.cfg.Decoy {
		r.Note("%s: the storm hit a second server of the admission configuration (%.0f%% of a core during the storm); the measured server served none of it, and its sessions' Read p99 rose %.1f× (what the machine shared with the storm costs them, a ceiling for the bar), notification drops %d",
			res.cfg.Name, 100*res.decoyCPU.Seconds()/res.during.Seconds(), read, res.dropSessions)
		return
	}
	rss := ratio(float64(res.rssPeak), float64(res.rssBefore))
	orphans := max(res.orphans.left, res.sessionsSettled-res.expected)
	c := res.storm.Coop
	allIn := "not every cooperative client got in"
	if c.Clients > 0 && c.In == c.Clients {
		allIn = fmt.Sprintf("every cooperative client in after %.1f s", c.AllIn.Seconds())
	}
	r.Note("%s: notification drops %d (bar 0: %s); Read p99 %.1f× (bar ≤ 2×: %s); orphan sessions %d (bar 0: %s); server RSS %.2f× (bar ≤ 1.5×: %s); %s (%d of %d)",
		res.cfg.Name, res.dropSessions, metOr(res.dropSessions == 0 && res.publishFailed == 0), read, metOr(read <= 2),
		orphans, metOr(orphans <= 0), rss, metOr(rss <= 1.5), allIn, c.In, c.Clients)
}

func metOr(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}
