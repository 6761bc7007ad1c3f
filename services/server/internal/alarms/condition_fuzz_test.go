package alarms

import (
	"testing"
	"time"

	"uastack.dev/pkg/status"
)

// FuzzConditionMethods plays what clients send (method calls with EventIds they pick,
// comments, shelving times) and input values, in any order, on a limit alarm, and
// checks what must always hold: every report has a fresh EventId, Retain is what the
// states make it, the branches stay bounded and each one awaits something, and a
// refused call changes nothing.
func FuzzConditionMethods(f *testing.F) {
	f.Add([]byte{0, 200, 3, 0, 4, 0, 0, 100, 3, 1, 0, 200, 0, 100, 0, 200})
	f.Add([]byte{5, 10, 6, 7, 7, 1, 1, 2, 2, 0, 255, 3, 2, 4, 2})
	f.Add([]byte{0, 250, 0, 128, 0, 250, 0, 128, 0, 250, 3, 1, 4, 1, 8, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		clk := &clock{t: time.Unix(1000, 0)}
		cfg := limitConfig(KindNonExclusiveLimit)
		if len(ops) > 0 {
			cfg.Kind = [...]Kind{KindNonExclusiveLimit, KindExclusiveLimit, KindOffNormal, KindAcknowledgeable}[ops[0]%4]
		}
		c := NewCondition(cfg, clk.now)
		seen := map[string]bool{}
		for i := 0; i+1 < len(ops) && i < 512; i += 2 {
			op, arg := ops[i]%11, ops[i+1]
			clk.t = clk.t.Add(time.Duration(arg) * time.Second)
			// The EventId the client names: the newest of the condition or of a branch,
			// or one it made up.
			var eid []byte
			switch bs := c.Branches(); {
			case arg%4 == 3:
				eid = []byte{arg}
			case arg%4 == 2 && len(bs) > 0:
				eid = bs[int(arg)%len(bs)].EventId
			default:
				eid = c.State().EventId
			}
			before := c.State()
			var out []Snapshot
			code := status.Good
			switch op {
			case 0:
				out = c.SetInput(float64(int(arg)-128) / 100)
			case 1:
				out, code = c.Enable()
			case 2:
				out, code = c.Disable()
			case 3:
				out, code = c.Acknowledge(eid, "ack", "u")
			case 4:
				out, code = c.Confirm(eid, "", "u")
			case 5:
				out, code = c.AddComment(eid, string(ops[i:]), "u")
			case 6:
				out, code = c.TimedShelve(time.Duration(arg) * time.Minute / 4)
			case 7:
				out, code = c.OneShotShelve()
			case 8:
				out, code = c.Unshelve()
			case 9:
				out = c.SetQuality(status.Code(uint32(arg) << 24))
			case 10:
				out = c.SetNormal(float64(arg % 4))
			}
			if code != status.Good {
				if len(out) != 0 || !sameState(before, c.State()) {
					t.Fatalf("op %d refused with %v but changed the state", op, code)
				}
			}
			out = append(out, c.Expire(clk.t)...)
			for _, s := range out {
				if len(s.EventId) != 16 || seen[string(s.EventId)] {
					t.Fatalf("op %d: EventId %x reused or malformed", op, s.EventId)
				}
				seen[string(s.EventId)] = true
				if s.Retain != c.retain(&s) {
					t.Fatalf("op %d: Retain %v of %+v", op, s.Retain, s)
				}
			}
			bs := c.Branches()
			if len(bs) > MaxBranches {
				t.Fatalf("%d branches", len(bs))
			}
			for _, b := range bs {
				if !c.waits(&b) || b.BranchId.IsNull() {
					t.Fatalf("a branch that awaits nothing: %+v", b)
				}
			}
			if st := c.State(); cfg.Kind == KindExclusiveLimit && st.Limits&(st.Limits-1) != 0 {
				t.Fatalf("exclusive alarm in two limit states: %b", st.Limits)
			}
			if st := c.State(); cfg.Kind.limit() && st.Enabled && st.Active != (st.Limits != 0) {
				t.Fatalf("active %v with limits %b", st.Active, st.Limits)
			}
		}
	})
}

// sameState compares what a refused call must leave alone.
func sameState(a, b Snapshot) bool {
	return string(a.EventId) == string(b.EventId) && a.Enabled == b.Enabled && a.Active == b.Active &&
		a.Acked == b.Acked && a.Confirmed == b.Confirmed && a.Shelving == b.Shelving && a.Comment == b.Comment &&
		a.Limits == b.Limits && a.Severity == b.Severity
}
