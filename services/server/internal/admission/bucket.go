package admission

import "time"

// Bucket is a token bucket: it holds at most burst tokens and gains rate tokens per
// second; each admitted event takes one. The zero Bucket never admits. A Bucket is not
// safe for concurrent use: its owner locks around it.
type Bucket struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time // when tokens was last brought up to date
}

// NewBucket returns a full bucket of burst tokens refilled at rate per second.
func NewBucket(rate float64, burst int, now time.Time) Bucket {
	return Bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
}

// refill brings the tokens up to date at now. A clock that went back adds nothing.
func (b *Bucket) refill(now time.Time) {
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(b.burst, b.tokens+dt.Seconds()*b.rate)
		b.last = now
	}
}

// Take takes a token at now and reports whether there was one.
func (b *Bucket) Take(now time.Time) bool {
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Wait returns how long from now until the bucket holds a token (zero when it holds one).
func (b *Bucket) Wait(now time.Time) time.Duration {
	b.refill(now)
	switch {
	case b.tokens >= 1:
		return 0
	case b.rate <= 0:
		return RetryAfterMax
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// Full reports whether the bucket is back to its burst at now: it then remembers
// nothing a new bucket would not, and may be forgotten.
func (b *Bucket) Full(now time.Time) bool {
	b.refill(now)
	return b.tokens >= b.burst
}
