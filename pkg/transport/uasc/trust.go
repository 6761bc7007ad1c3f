package uasc

import (
	"crypto/x509"
	"fmt"

	"uastack.dev/pkg/status"
)

// certificateStatus is the status sent for a refused client certificate: the one err
// carries, except that an untrusted certificate is reported as BadSecurityChecksFailed
// (Part 6 §6.7.6, 1.05), so that a probe learns nothing about the trust list.
func certificateStatus(err error) status.Code {
	code := statusOf(err)
	if code == status.BadCertificateUntrusted {
		code = status.BadSecurityChecksFailed
	}
	return code
}

// generation returns the number of Revalidate calls so far.
func (s *Server) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trustGen
}

// track adds sc to the live channels unless a Revalidate happened since generation gen.
func (s *Server) track(sc *ServerChannel, gen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.trustGen != gen {
		return false
	}
	s.live[sc] = struct{}{}
	return true
}

// untrack removes sc from the live channels; it is a no-op for a channel never tracked.
func (s *Server) untrack(sc *ServerChannel) {
	s.mu.Lock()
	delete(s.live, sc)
	s.mu.Unlock()
}

// Revalidate asks check about the client certificate chain (leaf first) of every open
// channel and closes each channel whose chain it refuses, keeping the others. It is meant
// for the trust-list change hook (Part 12 §7.8.2: when the TrustList changes, SecureChannels
// with an untrusted or revoked certificate shall be closed), typically
//
//	cancel := p.OnTrustChange(func() { srv.Revalidate(validate) })
//
// with the same function as ServerConfig.ValidateCertificate. A refused channel gets an ERR
// with the status an OpenSecureChannel from that certificate would get now (the status check
// wraps, BadCertificateUntrusted reported as BadSecurityChecksFailed; see RATIONALE.md), no
// further request of it reaches its handler, and its ServeConn returns the refusal. Channels
// that are being opened while Revalidate runs are validated again with
// ServerConfig.ValidateCertificate. Channels with SecurityPolicy None have no certificate
// and are kept.
//
// Revalidate calls check on the calling goroutine, without holding a lock, and returns
// once the ERRs are queued; the closing itself (which waits briefly for the peer to hang
// up) runs in the background. It is safe for concurrent use. It returns the number of
// channels closed.
func (s *Server) Revalidate(check func(chain []*x509.Certificate) error) int {
	s.mu.Lock()
	s.trustGen++
	chans := make([]*ServerChannel, 0, len(s.live))
	for sc := range s.live {
		chans = append(chans, sc)
	}
	s.mu.Unlock()
	n := 0
	for _, sc := range chans {
		err := check(sc.chain)
		if err == nil {
			continue
		}
		code := certificateStatus(err)
		sc.drop(code, fmt.Errorf("uasc: client certificate no longer accepted: %w: %w", code, err))
		n++
	}
	return n
}

// drop ends the channel from outside its reading goroutine: no further response is sent,
// no further request is handled, the client gets an ERR with code, and the connection is
// closed, which ends the read loop.
func (sc *ServerChannel) drop(code status.Code, err error) {
	sc.smu.Lock()
	sc.dropUnlock(code, err)
}

// dropUnlock is drop for a caller that holds smu; it returns with smu released.
func (sc *ServerChannel) dropUnlock(code status.Code, err error) {
	if sc.dropped.Load() {
		sc.smu.Unlock()
		return
	}
	sc.dropErr = err
	sc.dropDone = make(chan struct{})
	sc.dropped.Store(true)
	if sc.sendErr == nil {
		sc.sendErr = err
	}
	sc.smu.Unlock()
	s := sc.srv
	s.untrack(sc)
	go func() {
		defer close(sc.dropDone)
		_ = sc.conn.SendError(code, errReason(code))
	}()
}
