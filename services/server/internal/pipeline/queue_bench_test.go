package pipeline

import (
	"testing"
	"time"

	"uastack.dev/services/server/internal/admission"
)

// BenchmarkQueue is the cost of a job through the request queue: Push on the
// benchmark's goroutine, a worker takes and runs it. An op is one job; the benchmark
// pushes 64, then waits for them. fifo is NewQueue (and SharedOnly's order); the fair
// queues have the Balanced ledger of the server's defaults in front, with the jobs of
// one session or spread over eight.
func BenchmarkQueue(b *testing.B) {
	b.Run("fifo", func(b *testing.B) { benchQueue(b, NewQueue(256, 1, 1, time.Now), 1) })
	for _, owners := range []int{1, 8} {
		name := "fair/owners=1"
		if owners > 1 {
			name = "fair/owners=8"
		}
		b.Run(name, func(b *testing.B) {
			ctl, err := admission.New(admission.Config{Profile: admission.Balanced, MaxChannelCount: 1000,
				MaxConcurrentSessionEstablishment: 128, MaxQueuedRequestCount: 256, MaxParkedRequestCount: 1000, MaxTrackedOwners: 4096})
			if err != nil {
				b.Fatal(err)
			}
			benchQueue(b, NewQueueWith(QueueConfig{Min: 1, Max: 1, Now: time.Now, Ledger: ctl.Ledger(admission.StageQueue),
				SessionCapacity: 128, Fair: true, SessionWorkers: 2, Weight: ctl.Weight}), owners)
		})
	}
}

func benchQueue(b *testing.B, q *Queue, owners int) {
	defer q.Close()
	run := func() {}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		j := Job{Stage: StageService, Cost: 1, Key: admission.SessionOwner(uint64(n % owners)), Run: run}
		for {
			if ok, _ := q.Push(j); ok {
				break
			}
			q.Wait()
		}
		if n++; n%64 == 0 {
			q.Wait()
		}
	}
	q.Wait()
}
