package server

import (
	"fmt"
	"strings"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/uasc"
	"uastack.dev/services/server/internal/pipeline"
	"uastack.dev/services/server/internal/telemetry"
)

// timedService is the answer-time histogram of the service whose requests are of type ti.
type timedService struct {
	ti *codec.TypeInfo
	h  *telemetry.ServiceLatency
}

// maxTimedID bounds the ids of the request encodings the service table may hold: the
// standard ones are below 1000.
const maxTimedID = 4096

// timedServices returns the histogram of each row of table in latency ("Read" for
// ReadRequest), at the numeric id of the row's binary encoding.
func timedServices(table []pipeline.Service[*conn], latency *telemetry.Latency) ([]timedService, error) {
	var byID []timedService
	for _, row := range table {
		ti := row.Request.TypeInfo()
		id := ti.BinaryEncoding.IntID()
		if ti.BinaryEncoding.Namespace() != 0 || id >= maxTimedID {
			return nil, fmt.Errorf("service table: %s has no standard encoding id", ti.Name)
		}
		if int(id) >= len(byID) {
			byID = append(byID, make([]timedService, int(id)+1-len(byID))...)
		}
		byID[id] = timedService{ti: ti, h: latency.Service(strings.TrimSuffix(ti.Name, "Request"))}
	}
	return byID, nil
}

// served records the answer time of req, from its arrival to its answer handed to the
// channel, in its service's histogram (pipeline.Config.Served). On the real clock it
// costs one monotonic clock reading.
func (s *Server) served(req uasc.Request) {
	ti := req.Message.TypeInfo()
	id := int(ti.BinaryEncoding.IntID())
	if id >= len(s.latency) || s.latency[id].ti != ti || req.Received.IsZero() {
		return
	}
	h := s.latency[id].h
	var d time.Duration
	if s.realClock {
		d = time.Since(req.Received)
	} else {
		d = s.now().Sub(req.Received)
	}
	var channel uint32
	if req.Channel != nil {
		channel = req.Channel.ID()
	}
	h.Record(channel, d)
}
