package uasc

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/transport/uacp"
	"uastack.dev/pkg/ua"
)

// SecurityConfig is one (SecurityPolicy, MessageSecurityMode) pair a server accepts.
type SecurityConfig struct {
	PolicyURI string
	Mode      ua.MessageSecurityMode
}

// Default token lifetimes (Part 4 §5.5.2: the server revises the requested lifetime).
const (
	DefaultMinTokenLifetime = 10 * time.Second
	DefaultMaxTokenLifetime = time.Hour
)

// HandshakeGate bounds the OpenSecureChannel requests whose asymmetric cryptography runs
// at once (ServerConfig.Handshakes). It must be safe for concurrent use.
type HandshakeGate interface {
	// Enter waits for a turn, until ctx ends: renew tells the renewal of an open
	// channel's token, which completes what is established already, from the first OPN
	// of a connection. ok false refuses the OPN; otherwise leave ends the turn.
	Enter(ctx context.Context, renew bool) (leave func(), ok bool)
}

// ServerConfig configures a Server. It is read once by NewServer.
type ServerConfig struct {
	// Certificate is the server's application instance certificate (DER) and Key its
	// private key. Both are required unless Security holds only SecurityPolicy None.
	Certificate []byte
	Key         crypto.Signer
	// Security lists the accepted (policy, mode) pairs. It must not be empty: there is no
	// default, and None is accepted only when listed explicitly with mode None.
	Security []SecurityConfig
	// ValidateCertificate is asked about every client certificate chain (leaf first) before
	// the OPN is decrypted. A non-nil error refuses the channel with the status.Code it
	// wraps, or BadSecurityChecksFailed. It is required unless only None is accepted, and
	// must be safe for concurrent use.
	ValidateCertificate func(chain []*x509.Certificate) error
	// MinTokenLifetime and MaxTokenLifetime bound the revised token lifetime; zero means
	// DefaultMinTokenLifetime and DefaultMaxTokenLifetime.
	MinTokenLifetime, MaxTokenLifetime time.Duration
	// IDs allocates SecureChannelIds; nil gives the Server its own.
	IDs *IDAllocator
	// Budget bounds the bytes held in partly reassembled messages by all channels of the
	// Server; nil means a Budget of DefaultBudget bytes.
	Budget *Budget
	// MaxRetainedPerChannel bounds the bytes one channel holds in a partly reassembled
	// message, its share of the Budget, so that a few channels that never finish their
	// messages cannot take it all; beyond it the channel ends with
	// BadTcpNotEnoughResources. Serve offers clients no larger MaxMessageSize (Part 6
	// §7.1.2.4), so a client that keeps to it never meets the bound. Zero means
	// DefaultMaxRetainedPerChannel.
	MaxRetainedPerChannel int
	// OpenTimeout bounds the time from ServeConn's start (right after the Acknowledge, in
	// Serve) until the first OpenSecureChannel request has been read whole; expiry ends
	// the connection with an ERR BadTimeout. Zero means DefaultOpenTimeout, negative no
	// bound. The Hello before it is bounded by UACP.HelloTimeout.
	OpenTimeout time.Duration
	// AssemblyTimeout bounds the time from a message's first chunk until its last, when
	// it has several; expiry ends the channel with an ERR BadTimeout and frees what it
	// held of the Budget. Zero means DefaultAssemblyTimeout, negative no bound. A channel
	// idle between messages is not affected.
	AssemblyTimeout time.Duration
	// MaxSendBacklog bounds the bytes of responses a channel holds while its peer does
	// not read them; beyond it the channel is closed (BadTcpNotEnoughResources). Zero
	// means twice the peer's MaxMessageSize, at least 1 MiB.
	MaxSendBacklog int
	// UACP configures the connection protocol for Serve.
	UACP uacp.ServerConfig
	// MaxChannelCount bounds the connections Serve holds at once, over all its listeners;
	// zero means DefaultMaxChannelCount. A connection beyond it is refused before anything
	// is read from it, so before any crypto work: it gets an ERR BadTcpNotEnoughResources
	// (Part 6 §7.1.5, Table 74: "not enough resources to process the request"). ServeConn
	// called directly is not counted.
	MaxChannelCount int
	// Admit, when set, is asked about every connection Serve accepts within
	// MaxChannelCount, before anything is read from it: the place for a connection rate or
	// a limit per source. Good admits the connection; any other code refuses it, and the
	// peer gets an ERR with that code. Serve calls release, when not nil, once the
	// connection has ended, or at once when it was refused. Admit runs on Serve's
	// goroutine, so it must not block, and must be safe for concurrent use when Serve runs
	// on several listeners.
	Admit func(remote net.Addr) (release func(), code status.Code)
	// MaxRefusing bounds the refusals in progress at once, each a goroutine that sends
	// the ERR and waits up to uacp.RefuseTimeout for the peer to close; a connection
	// refused beyond it is closed unanswered, so that a flood of connections costs a
	// bounded number of goroutines. Zero means DefaultMaxRefusing.
	MaxRefusing int
	// Refused, when set, learns of every connection Serve refused. It runs on Serve's
	// goroutine before the ERR is sent, so it must not block.
	Refused func(Refusal)
	// Expired, when set, learns of every connection ended because one of its deadlines
	// passed (HelloTimeout, OpenTimeout, ChunkTimeout, AssemblyTimeout, WriteTimeout),
	// once per connection, and which one. Overdrawn, when set, learns of every channel
	// ended because a chunk would have taken it beyond its share of the reassembly budget
	// (MaxRetainedPerChannel) or the Budget beyond what it holds. Both run on the
	// connection's goroutine, for any number of connections at once: they must be safe
	// for concurrent use and must not block. Neither is called on the message path, only
	// as a connection ends.
	Expired   func(Deadline)
	Overdrawn func(Overdraft)
	// Panicked, when set, learns of a panic on a connection's own goroutine in Serve
	// (the handshakes, decoding, a handler answering inline): the connection is closed
	// and the Server serves on. It gets the panic's value and stack, on that goroutine.
	// Nil lets the panic end the process.
	Panicked func(v any, stack []byte)
	// Handshakes, when set, bounds the OpenSecureChannel requests whose asymmetric
	// cryptography (RSA) runs at once, so that a connect storm cannot take every
	// processor from the open channels' requests. ServeConn takes a turn of it once an
	// OPN of a policy other than None is read whole and before its certificate is
	// checked, and ends the turn once the response is sealed. An OPN that gets no turn
	// ends the channel with an ERR BadTcpServerTooBusy.
	Handshakes HandshakeGate
	// Decode bounds the strings, byte strings and arrays of a request (Part 6 §5.2.2), and
	// the memory it takes once decoded (MaxDecodeMultiple times its size, so that arrays
	// of one-byte Variants cannot turn 16 MiB into gigabytes); zero fields take
	// codec.DefaultLimits. MaxMessageSize is not used: a reassembled message is already
	// within the negotiated size. A request beyond them is answered with a ServiceFault
	// BadEncodingLimitsExceeded, and the channel stays open.
	Decode codec.Limits
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// DefaultBudget is the reassembly budget of a Server whose config names none.
const DefaultBudget = 256 << 20

// DefaultMaxRetainedPerChannel is the share of the reassembly budget one channel may hold
// when the config names none: a thirty-second of DefaultBudget, so that sixteen channels
// that never finish their messages hold at most half of it.
const DefaultMaxRetainedPerChannel = DefaultBudget / 32

// Default deadlines of a Server whose config names none.
const (
	// DefaultOpenTimeout bounds the wait for the first OpenSecureChannel, as
	// uacp.DefaultHandshakeTimeout bounds the wait for the Hello.
	DefaultOpenTimeout = uacp.DefaultHandshakeTimeout
	// DefaultAssemblyTimeout bounds the reassembly of one message: 8 MiB (the default
	// share) needs about 1 Mbit/s to make it.
	DefaultAssemblyTimeout = time.Minute
)

// DefaultMaxChannelCount is the MaxChannelCount of a Server whose config names none: the
// default of the server's limits.maxChannelCount.
const DefaultMaxChannelCount = 1000

// DefaultMaxRefusing is ServerConfig.MaxRefusing's default: enough that a client refused
// in a storm is told so (a bare close looks like a failure, and carries no code to back
// off on), for a few MiB of goroutines at most.
const DefaultMaxRefusing = 256

// orDefault returns d for zero, 0 (no bound) for a negative t, else t.
func orDefault(t, d time.Duration) time.Duration {
	switch {
	case t == 0:
		return d
	case t < 0:
		return 0
	}
	return t
}

// IDAllocator hands out SecureChannelIds that are never 0 and never in use twice. It is
// safe for concurrent use.
type IDAllocator struct {
	mu   sync.Mutex // guards next, live
	next uint32
	live map[uint32]struct{}
}

// NewIDAllocator returns an allocator starting at a random id.
func NewIDAllocator() *IDAllocator {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &IDAllocator{next: uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16, live: make(map[uint32]struct{})}
}

// Allocate returns an id not currently live and marks it live.
func (a *IDAllocator) Allocate() uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		a.next++
		if _, used := a.live[a.next]; a.next != 0 && !used {
			a.live[a.next] = struct{}{}
			return a.next
		}
	}
}

// Free makes id available again.
func (a *IDAllocator) Free(id uint32) {
	a.mu.Lock()
	delete(a.live, id)
	a.mu.Unlock()
}

// Server is the server role of the secure channel: it holds the checked configuration, the
// SecureChannelId allocator and the reassembly budget its channels share, and the set of
// live channels that Revalidate re-checks.
type Server struct {
	cfg      ServerConfig
	cert     *x509.Certificate
	handler  Handler
	security map[string][]ua.MessageSecurityMode
	// realClock: cfg.Now was left to time.Now (see channel.timeOf).
	realClock bool
	// slots holds a token for every connection Serve is serving (MaxChannelCount), and
	// refusing one for every refusal in progress (MaxRefusing).
	slots, refusing chan struct{}

	mu sync.Mutex // guards live, trustGen
	// live holds the open channels with a client certificate, for Revalidate. A channel is
	// added once its certificate passed ValidateCertificate and removed when it ends; the
	// message path never touches it.
	live map[*ServerChannel]struct{}
	// trustGen counts Revalidate calls, so that a channel validated before one but
	// registered after it is validated again (see track).
	trustGen uint64
}

// NewServer checks cfg and returns a Server whose channels get their handlers from h.
func NewServer(cfg ServerConfig, h Handler) (*Server, error) {
	if len(cfg.Security) == 0 {
		return nil, errors.New("uasc: ServerConfig.Security is empty")
	}
	if f, ok := h.(HandlerFunc); h == nil || (ok && f == nil) {
		return nil, errors.New("uasc: nil Handler")
	}
	s := &Server{cfg: cfg, handler: h, security: make(map[string][]ua.MessageSecurityMode), live: make(map[*ServerChannel]struct{})}
	for _, sc := range cfg.Security {
		p, ok := policy.Lookup(sc.PolicyURI)
		if !ok {
			return nil, fmt.Errorf("uasc: unknown security policy %q", sc.PolicyURI)
		}
		none := p.Info().URI == policy.URINone
		if none != (sc.Mode == ua.MessageSecurityModeNone) || (sc.Mode < ua.MessageSecurityModeNone || sc.Mode > ua.MessageSecurityModeSignAndEncrypt) {
			return nil, fmt.Errorf("uasc: policy %s with mode %v", p.Info().Name, sc.Mode)
		}
		if !none {
			if s.cert == nil {
				cert, err := x509.ParseCertificate(cfg.Certificate)
				if err != nil {
					return nil, fmt.Errorf("uasc: server certificate: %w", err)
				}
				s.cert = cert
			}
			if cfg.Key == nil || cfg.ValidateCertificate == nil {
				return nil, errors.New("uasc: secure policies need Key and ValidateCertificate")
			}
			if _, err := p.NewAsymmetric(cfg.Key, s.cert); err != nil {
				return nil, fmt.Errorf("uasc: server key for %s: %w", p.Info().Name, err)
			}
		}
		s.security[sc.PolicyURI] = append(s.security[sc.PolicyURI], sc.Mode)
	}
	if s.cfg.MinTokenLifetime <= 0 {
		s.cfg.MinTokenLifetime = DefaultMinTokenLifetime
	}
	if s.cfg.MaxTokenLifetime <= 0 {
		s.cfg.MaxTokenLifetime = DefaultMaxTokenLifetime
	}
	if s.cfg.MaxTokenLifetime < s.cfg.MinTokenLifetime {
		return nil, errors.New("uasc: MaxTokenLifetime below MinTokenLifetime")
	}
	if s.cfg.IDs == nil {
		s.cfg.IDs = NewIDAllocator()
	}
	if s.cfg.Budget == nil {
		s.cfg.Budget = NewBudget(DefaultBudget)
	}
	switch {
	case s.cfg.MaxRetainedPerChannel < 0:
		return nil, errors.New("uasc: negative MaxRetainedPerChannel")
	case s.cfg.MaxRetainedPerChannel == 0:
		s.cfg.MaxRetainedPerChannel = DefaultMaxRetainedPerChannel
	}
	// No client is offered a message size the channel's share cannot hold.
	lim := &s.cfg.UACP.Limits
	if lim.MaxMessageSize == 0 {
		lim.MaxMessageSize = uacp.DefaultLimits.MaxMessageSize
	}
	lim.MaxMessageSize = uint32(min(uint64(lim.MaxMessageSize), uint64(s.cfg.MaxRetainedPerChannel)))
	s.cfg.OpenTimeout = orDefault(s.cfg.OpenTimeout, DefaultOpenTimeout)
	s.cfg.AssemblyTimeout = orDefault(s.cfg.AssemblyTimeout, DefaultAssemblyTimeout)
	if s.cfg.Now == nil {
		s.cfg.Now, s.realClock = time.Now, true
	}
	switch {
	case s.cfg.MaxChannelCount < 0:
		return nil, errors.New("uasc: negative MaxChannelCount")
	case s.cfg.MaxChannelCount == 0:
		s.cfg.MaxChannelCount = DefaultMaxChannelCount
	}
	s.slots = make(chan struct{}, s.cfg.MaxChannelCount)
	switch {
	case s.cfg.MaxRefusing < 0:
		return nil, errors.New("uasc: negative MaxRefusing")
	case s.cfg.MaxRefusing == 0:
		s.cfg.MaxRefusing = DefaultMaxRefusing
	}
	s.refusing = make(chan struct{}, s.cfg.MaxRefusing)
	return s, nil
}
