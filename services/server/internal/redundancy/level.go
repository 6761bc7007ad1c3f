// Package redundancy is what a server tells its clients about its own state as a member
// of a redundant set (Part 4 §6.6.2): the ServiceLevel (Part 5 §6.3.34), computed from
// the health the redundancy machinery reports and the load the server carries. Nothing
// here knows of the address space or of NATS; the server publishes what it computes.
// RATIONALE.md argues the ranges, the load's inputs and its smoothing.
package redundancy

import (
	"math"
	"strconv"
)

// Health is what the redundancy machinery knows of the server's ability to serve; each
// value selects one subrange of ServiceLevel (Part 4 §6.6.2.4.2, Table 109). The zero
// Health is Healthy: a server that nothing reports on serves fully.
type Health uint8

const (
	// Healthy: the server serves fully; ServiceLevel 200..255, lower with more load.
	Healthy Health = iota
	// Degraded: the server serves, but partly (its mirror is unreachable, so a failover
	// from it would lose state); ServiceLevel 2..199, lower with more load.
	Degraded
	// NoData: the server is up but has no data to serve yet (it catches up with the
	// set); ServiceLevel 1.
	NoData
	// Maintenance: clients are to leave and not to come (a drain before shutdown);
	// ServiceLevel 0.
	Maintenance
)

// String returns the subrange's name as Part 4 Table 109 writes it.
func (h Health) String() string {
	switch h {
	case Healthy:
		return "Healthy"
	case Degraded:
		return "Degraded"
	case NoData:
		return "NoData"
	case Maintenance:
		return "Maintenance"
	}
	return "Health(" + strconv.Itoa(int(h)) + ")"
}

// The bounds of the subranges of Part 4 Table 109 that load moves within.
const (
	healthyTop     = 255
	healthyBottom  = 200
	degradedTop    = 199
	degradedBottom = 2
	noDataLevel    = 1
)

// Level maps the health h and the load (0 idle, 1 at a limit; clamped to that range, NaN
// taken as 1) to a ServiceLevel: Healthy 255 down to 200 and Degraded 199 down to 2,
// one level less for each whole step of load (1/55 and 1/197 of it); NoData 1;
// Maintenance 0. A Health not named in this package is NoData: the server cannot vouch
// for what it serves.
func Level(h Health, load float64) byte {
	switch h {
	case Healthy:
		return scale(load, healthyTop, healthyBottom)
	case Degraded:
		return scale(load, degradedTop, degradedBottom)
	case Maintenance:
		return 0
	}
	return noDataLevel
}

// scale places load between top (idle) and bottom (at a limit). A level is given up only
// for a whole step of load, so an idle server with a session or two still shows top.
func scale(load float64, top, bottom byte) byte {
	switch {
	case math.IsNaN(load) || load >= 1:
		return bottom
	case load <= 0:
		return top
	}
	return top - byte(load*float64(top-bottom))
}
