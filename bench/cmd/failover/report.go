package main

import (
	"fmt"
	"strconv"
	"time"

	"uastack.dev/bench/internal/report"
)

// Row names of the report. The set's figures are in the column colSet; each server's
// in a column of its own (serverColumn).
const (
	colSet = "value"

	rowEstablished   = "sessions established"
	rowSetupRate     = "establishment (sessions/s)"
	rowAffected      = "sessions on the killed server"
	rowResumed       = "of them resumed at a survivor"
	rowP50           = "failover time p50 (ms)"
	rowP90           = "failover time p90 (ms)"
	rowP99           = "failover time p99 (ms)"
	rowMax           = "failover time max (ms)"
	rowAllMoved      = "every moved client at a survivor after (ms)"
	rowNewSessions   = "sessions created anew"
	rowRecreated     = "subscriptions created again"
	rowLost          = "notifications lost (Stats.Lost)"
	rowRepublished   = "notifications republished"
	rowStandbys      = "moved sessions with a standby at the kill"
	rowDropped       = "notifications dropped by a client's buffer"
	rowMovedMissed   = "values a moved session missed outside its gap"
	rowGapTotal      = "values written in the gap and not seen (sampled data)"
	rowGapMean       = "values in the gap not seen, mean per moved session"
	rowGapMax        = "values in the gap not seen, max per moved session"
	rowNotResumed    = "values after the kill at sessions never resumed"
	rowSurvivors     = "survivors' own sessions"
	rowSurvivorDrops = "survivors' own sessions that missed values"
	rowSurvivorMiss  = "values the survivors' own sessions missed"
	rowNotCurrent    = "sessions not at the current value after settling"
	rowUnlocated     = "sessions still moving at the end (not located: no counts read)"
	rowWritten       = "values written (to every live server)"
	rowWriteFailed   = "writes failed or skipped"
	rowBenchWarmCPU  = "bench process CPU in the warm-up (% of a core)"
	rowBenchCPU      = "bench process CPU, kill to all resumed (% of a core)"
	rowFailoverTook  = "kill to all resumed (s)"

	rowNATSP50 = "NATS write p50 (ms; a KV put, replicated as the mirror's)"
	rowNATSP99 = "NATS write p99 (ms)"
	rowNATSErr = "NATS writes failed"

	rowSessionsBefore = "sessions before the kill"
	rowSessionsAfter  = "sessions after"
	rowCPUWarm        = "CPU in the warm-up (% of a core)"
	rowCPUFailover    = "CPU, kill to all resumed (% of a core)"
	rowCPUAfter       = "CPU after (% of a core)"
	rowRSSBefore      = "RSS before the kill (MiB)"
	rowRSSAfter       = "RSS after (MiB)"
)

// serverColumn names server i's column.
func serverColumn(i, killed int) string {
	if i == killed {
		return "server " + strconv.Itoa(i) + " (killed)"
	}
	return "server " + strconv.Itoa(i)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(b int64) float64        { return float64(b) / (1 << 20) }

func percentOfCore(cpu, wall time.Duration) float64 {
	return 100 * cpu.Seconds() / max(wall.Seconds(), 1e-9)
}

// build turns the outcome into the report.
func build(res *outcome) *report.Report {
	o := res.o
	r := report.New("failover")
	set := func(name string, v float64) {
		r.Add(report.Row{Name: name, Values: []report.Value{{Name: colSet, Value: v}}})
	}
	var took []time.Duration
	var tookMs []float64
	resumed, newSessions, missed, gap, gapMax, notResumed := 0, 0, 0, 0, 0, 0
	for _, m := range res.moved {
		if m.resumed {
			resumed++
			took = append(took, m.took)
			tookMs = append(tookMs, ms(m.took))
		}
		if m.newSession {
			newSessions++
		}
		missed += m.missed
		gap += m.gap
		gapMax = max(gapMax, m.gap)
		notResumed += m.notResumed
	}
	p := report.Percentiles(took, 0.5, 0.9, 0.99, 1)

	set(rowEstablished, float64(res.established))
	set(rowSetupRate, float64(res.established)/max(res.setup.Seconds(), 1e-9))
	set(rowAffected, float64(len(res.moved)))
	set(rowResumed, float64(resumed))
	if len(took) > 0 { // no percentiles of nothing
		set(rowP50, ms(p[0]))
		set(rowP90, ms(p[1]))
		set(rowP99, ms(p[2]))
		set(rowMax, ms(p[3]))
	}
	if res.allMoved >= 0 {
		set(rowAllMoved, ms(res.allMoved))
	}
	set(rowFailoverTook, res.failover.Seconds())
	set(rowNewSessions, float64(newSessions))
	set(rowRecreated, float64(res.recreated))
	set(rowLost, float64(res.lost))
	set(rowRepublished, float64(res.republished))
	set(rowStandbys, float64(res.standbys))
	set(rowDropped, float64(res.dropped))
	set(rowMovedMissed, float64(missed))
	set(rowGapTotal, float64(gap))
	set(rowGapMean, float64(gap)/float64(max(len(res.moved), 1)))
	set(rowGapMax, float64(gapMax))
	if notResumed > 0 {
		set(rowNotResumed, float64(notResumed))
	}
	set(rowSurvivors, float64(res.survivors))
	set(rowSurvivorDrops, float64(res.survivorDrops))
	set(rowSurvivorMiss, float64(res.survivorMiss))
	set(rowNotCurrent, float64(res.notCurrent))
	if res.unlocated > 0 {
		set(rowUnlocated, float64(res.unlocated))
	}
	set(rowWritten, float64(res.written))
	set(rowWriteFailed, float64(res.writeFailed+res.writeSkipped))
	set(rowBenchWarmCPU, percentOfCore(res.benchWarmCPU, res.warm))
	set(rowBenchCPU, percentOfCore(res.benchCPU, res.failover))

	perServer := func(name string, f func(i int, u serverUse) (float64, bool)) {
		row := report.Row{Name: name}
		for i, u := range res.servers {
			if v, ok := f(i, u); ok {
				row.Values = append(row.Values, report.Value{Name: serverColumn(i, o.kill), Value: v})
			}
		}
		r.Add(row)
	}
	live := func(i int) bool { return i != o.kill }
	perServer(rowSessionsBefore, func(_ int, u serverUse) (float64, bool) { return float64(u.sessionsBefore), true })
	perServer(rowSessionsAfter, func(_ int, u serverUse) (float64, bool) { return float64(u.sessionsAfter), true })
	perServer(rowCPUWarm, func(_ int, u serverUse) (float64, bool) {
		return percentOfCore(u.cpuKill-u.cpuWarm, res.warm), true
	})
	perServer(rowCPUFailover, func(i int, u serverUse) (float64, bool) {
		return percentOfCore(u.cpuResumed-u.cpuKill, res.failover), live(i)
	})
	perServer(rowCPUAfter, func(i int, u serverUse) (float64, bool) {
		return percentOfCore(u.cpuAfter-u.cpuResumed, res.after), live(i)
	})
	perServer(rowRSSBefore, func(_ int, u serverUse) (float64, bool) { return mib(u.rssBefore), true })
	perServer(rowRSSAfter, func(i int, u serverUse) (float64, bool) { return mib(u.rssAfter), live(i) })

	phaseNames := [phases]string{"warm-up", "kill to all resumed", "after"}
	natsRow := func(name string, f func(ph int) float64) {
		row := report.Row{Name: name}
		for ph, col := range phaseNames {
			row.Values = append(row.Values, report.Value{Name: col, Value: f(ph)})
		}
		r.Add(row)
	}
	natsRow(rowNATSP50, func(ph int) float64 { return ms(report.Percentiles(res.natsTook[ph], 0.5)[0]) })
	natsRow(rowNATSP99, func(ph int) float64 { return ms(report.Percentiles(res.natsTook[ph], 0.99)[0]) })
	natsRow(rowNATSErr, func(ph int) float64 { return float64(res.natsFails[ph]) })

	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	allResumed := resumed == len(res.moved) && len(res.moved) > 0
	p99 := "none"
	if len(took) > 0 {
		p99 = report.FormatNumber(ms(p[2])) + " ms"
	}
	r.Note("Bar: every moved session resumed, p99 failover time under %s: %s (%d of %d resumed, p99 %s).",
		barFailoverP99, verdict(allResumed && p[2] < barFailoverP99), resumed, len(res.moved), p99)
	r.Note("Bar: 0 notifications lost, 0 subscriptions created again, 0 sessions created anew, 0 values missed outside the gap: %s (%d, %d, %d, %d).",
		verdict(res.lost == 0 && res.recreated == 0 && newSessions == 0 && missed == 0), res.lost, res.recreated, newSessions, missed)
	r.Note("Bar: the survivors' own sessions miss no value, and every session ends at the current value: %s (%d values missed, %d sessions not current).",
		verdict(res.survivorMiss == 0 && res.notCurrent == 0), res.survivorMiss, res.notCurrent)
	r.Note("Set: %d uastack servers (child processes) mirroring through %d NATS nodes in the bench process (replicas %d); %d sessions, %s, one subscription each (publishing interval %s) monitoring %s (queue %d); the counter written every %s to every live server; server %d killed with SIGKILL after %s.",
		o.servers, o.nats, o.nats, o.sessions, o.security, o.interval, demoNode, o.queue, o.interval, o.kill, o.killAfter)
	move := "the move reads the ServiceLevel of every server of the client's Failover list with a session each, then opens a channel to the best and activates the same session there (ties to the earlier in the list, rotated per session to spread the moved sessions)"
	if o.standby > 0 {
		move = fmt.Sprintf("each session keeps a standby (client.Standby, its ServiceLevel read every %s): a channel and a session of its own at the best other server of its Failover list (ties to the earlier in the list, rotated per session), made at a random point of the first interval; the move activates the same session on the standby's channel, with no handshake; without a standby it moves as with -standby 0 (probes, then a new channel)", o.standby)
	}
	r.Note("The clients' Backoff: Initial %s, Max %s, Attempts %d (at the killed server, whose port refuses at once, before the move); %s. ServiceLevelWatch is off: a killed server announces nothing.",
		o.backoff.Initial, o.backoff.Max, o.backoff.Attempts, move)
	r.Note("Failover time: from the kill to the delivery of the first message published after the server was gone (or a keep-alive heard after it), so a Republish the client makes first to fill a gap is in it; the gap of a session is from the highest value it got in messages published before the kill to the lowest in the first message after it.")
	r.Note("The NATS nodes and the clients run in the bench process: their CPU is the bench process's, not the servers'.")

	h := report.NewHistogram("failover", fmt.Sprintf("Failover times of %d sessions (SIGKILL, %s)", len(took), o.security),
		"failover time (ms)", "sessions", tookMs, o.bins)
	h.Marks = []report.Mark{{Name: "p50", X: ms(p[0])}, {Name: "p99", X: ms(p[2])}, {Name: "bar", X: ms(barFailoverP99)}}
	r.AddHistogram(h)
	return r
}
