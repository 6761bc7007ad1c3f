package uasc

import (
	"fmt"
	"time"

	"uastack.dev/pkg/status"
)

// armExpiryLocked makes tok the channel's newest token and (re)arms the expiry timer for
// tok's deadline: one timer per channel, created at the first OPN and reset by every
// renewal. It must run under smu.
func (sc *ServerChannel) armExpiryLocked(tok *token) {
	sc.newest = tok
	d := max(tok.deadline.Sub(sc.now()), time.Millisecond)
	if sc.expiry == nil {
		sc.expiry = time.AfterFunc(d, sc.expire)
		return
	}
	sc.expiry.Reset(d)
}

// expire runs when the expiry timer fires. If the newest token is past its deadline by
// the same test the receive path applies (token.expired with ServerConfig.Now), the channel
// is dropped with BadSecureChannelTokenUnknown, which frees its SecureChannelId and
// reassembly budget once the read loop ends (see RATIONALE.md). A firing that lost the race
// with a renewal finds a fresh token and does nothing (the renewal re-armed the timer); one
// that finds the token not yet expired by ServerConfig.Now re-arms for the rest. A channel
// already ending is left alone.
func (sc *ServerChannel) expire() {
	sc.smu.Lock()
	if sc.sendErr != nil {
		sc.smu.Unlock()
		return
	}
	tok, now := sc.newest, sc.now()
	if !tok.expired(now) {
		sc.expiry.Reset(max(tok.deadline.Sub(now), time.Millisecond))
		sc.smu.Unlock()
		return
	}
	sc.dropUnlock(status.BadSecureChannelTokenUnknown, fmt.Errorf(
		"uasc: TokenId %d expired at %v without renewal: %w", tok.id, tok.deadline, status.BadSecureChannelTokenUnknown))
}

// stopExpiry stops the expiry timer and marks the send half closed, under smu, so that a
// firing that is already running sees the channel ending and neither drops nor re-arms.
func (sc *ServerChannel) stopExpiry() {
	sc.smu.Lock()
	if sc.sendErr == nil {
		sc.sendErr = errClosed
	}
	if sc.expiry != nil {
		sc.expiry.Stop()
	}
	sc.smu.Unlock()
}
