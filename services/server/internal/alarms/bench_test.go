package alarms

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/nodemgr"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/ua/id"
)

// BenchmarkConditionChange: one state change of a limit alarm (High and HighHigh in
// turn, one event each) delivered to N clients, each with a subscription and an event
// item on the Server object: the input's SetValue, the transition, the condition's
// variables, the event and its filter per item, and every client's Publish answered
// with it. ns/client is the op's time over N; cpu-ns/op the process's CPU time (all
// goroutines, the collector's among them) per op. With no client the event is not built:
// what is left is the transition and the condition's variables.
func BenchmarkConditionChange(b *testing.B) {
	for _, n := range []int{0, 1, 10, 100, 1000} {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) {
			s := newSetup(b)
			s.alarm(b, "Alarm", KindExclusiveLimit)
			cs := make([]*client, n)
			for i := range cs {
				cs[i] = s.client(b, i)
			}
			setSource(s, 0.6)
			s.publish(cs...)
			for _, c := range cs {
				c.in.take()
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for i := range b.N {
				v := 0.95
				if i%2 == 1 {
					v = 0.6
				}
				setSource(s, v)
				s.publish(cs...)
				if i%64 == 63 {
					for _, c := range cs {
						require.Len(b, c.in.take(), 64)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			if n > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/client")
			}
		})
	}
}

// BenchmarkConditionRefresh: a ConditionRefresh of 1,000 retained conditions, called
// through the Space as Call does, and the 1,002 events it queues answered to the
// client's Publishes.
func BenchmarkConditionRefresh(b *testing.B) {
	const conditions = 1000
	s := newSetup(b)
	for i := range conditions {
		s.alarm(b, "Alarm"+strconv.Itoa(i), KindExclusiveLimit)
	}
	c := s.client(b, 0)
	setSource(s, 0.6) // every alarm active and unacknowledged: retained
	s.publish(c)
	require.Len(b, c.in.take(), conditions)
	p := nodemgr.Principal{SessionID: c.session}
	refresh := n0(id.ConditionType_ConditionRefresh)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		if code := s.call(p, n0(id.ConditionType), refresh, codec.UInt32Variant(c.sub)); code != status.Good {
			b.Fatal(code)
		}
		for got := 0; got < conditions+2; {
			s.publish(c)
			got += len(c.in.take())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}
