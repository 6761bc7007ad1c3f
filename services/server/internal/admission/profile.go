package admission

import "time"

// Profile is the isolation profile (limits.isolationProfile): how owners share each
// stage. The names are the OPC Foundation .NET stack's.
type Profile uint8

const (
	// SharedOnly keeps one shared pool per stage and one FIFO queue: no owners, no
	// reserves. The rate limits and capacities still apply.
	SharedOnly Profile = iota
	// FairShare counts owners in bounded tables, applies per-owner limits, keeps
	// headroom in every stage for owners below their fair share and serves the queue
	// in weighted turns per owner.
	FairShare
	// Balanced is FairShare with small reserves for bootstrap (an owner's first
	// connection, session establishment or request) and reconnect (a client coming back
	// to its live, activated session). The default.
	Balanced
	// TrustedReservations is Balanced with a reserve and a weight for each configured
	// trusted owner.
	TrustedReservations
)

// profileNames are the names of the profiles as the configuration spells them.
var profileNames = [...]string{"SharedOnly", "FairShare", "Balanced", "TrustedReservations"}

// String returns the profile's configuration name.
func (p Profile) String() string {
	if int(p) < len(profileNames) {
		return profileNames[p]
	}
	return "Unknown"
}

// ParseProfile returns the profile named s (case-sensitive, as String spells it).
func ParseProfile(s string) (Profile, bool) {
	for i, n := range profileNames {
		if n == s {
			return Profile(i), true
		}
	}
	return 0, false
}

// ProfileNames returns the names ParseProfile accepts.
func ProfileNames() []string { return profileNames[:] }

// owners reports whether the profile counts owners (every profile but SharedOnly).
func (p Profile) owners() bool { return p >= FairShare }

// reserves reports whether the profile keeps bootstrap and reconnect reserves.
func (p Profile) reserves() bool { return p >= Balanced }

// Stage is a separately counted resource. The names (String) are the .NET stack's
// stage names, for the stage label of the rejection metric.
type Stage uint8

const (
	// StageConnection counts the connections of the listener, from accept to close.
	StageConnection Stage = iota
	// StageSession counts CreateSession and ActivateSession requests in progress, from
	// receipt to answer (not the sessions they make).
	StageSession
	// StageQueue counts the requests waiting in the request queue for a worker.
	StageQueue
	// StageParked counts the requests handed to node managers, from receipt until they
	// are answered: queued, running or parked in a manager that completes later.
	StageParked
	// StageCount is the number of stages.
	StageCount
)

var stageNames = [...]string{"Connection", "SessionEstablishment", "RequestQueue", "ParkedRequest"}

// String names the stage as the metrics label it.
func (s Stage) String() string {
	if s < StageCount {
		return stageNames[s]
	}
	return "Unknown"
}

// Reason is why a stage refused a charge; the names are the .NET stack's reason labels.
type Reason uint8

const (
	// Capacity: the shared pool and every reserve the charge may use are full.
	Capacity Reason = iota
	// OwnerLimit: the owner holds its hard limit, or more than its fair share while
	// the stage is nearly full.
	OwnerLimit
	// OwnerTableFull: the stage tracks as many owners as it may and the owner is new.
	OwnerTableFull
	// InvalidOwner: the charge names no owner the stage can account (a zero Owner, or
	// a trusted owner that is not configured).
	InvalidOwner
	// ReasonCount is the number of reasons.
	ReasonCount
)

var reasonNames = [...]string{"Capacity", "OwnerLimit", "OwnerTableFull", "InvalidOwner"}

// String names the reason as the metrics label it.
func (r Reason) String() string {
	if r < ReasonCount {
		return reasonNames[r]
	}
	return "Unknown"
}

// Class is the kind of traffic a charge is for; a class other than Ordinary may use a
// reserve when the shared pool is full (Balanced, TrustedReservations).
type Class uint8

const (
	// Ordinary traffic uses the shared pool only. A Ledger treats an ordinary charge
	// of an owner that holds nothing at its stage as Bootstrap.
	Ordinary Class = iota
	// Bootstrap is an owner's first connection, session establishment or request.
	Bootstrap
	// Reconnect is a client coming back to a live session: an ActivateSession naming
	// an activated session, or a connection from a source that holds one.
	Reconnect
	// classCount is the number of classes.
	classCount
)

var classNames = [...]string{"Ordinary", "Bootstrap", "Reconnect"}

// String names the class.
func (c Class) String() string {
	if c < classCount {
		return classNames[c]
	}
	return "Unknown"
}

// Bounds of a RetryAfterMs hint (Part 4 §7.1, AdditionalParametersType) sent with
// BadServerTooBusy: at least RetryAfterMin so that refused clients do not spin, at most
// RetryAfterMax so that a stalled estimate does not park them for long.
const (
	RetryAfterMin = 10 * time.Millisecond
	RetryAfterMax = 10 * time.Second
)

// clampRetryAfter bounds d to [RetryAfterMin, RetryAfterMax].
func clampRetryAfter(d time.Duration) time.Duration {
	return min(max(d, RetryAfterMin), RetryAfterMax)
}
