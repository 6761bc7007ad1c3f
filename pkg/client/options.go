package client

import (
	"crypto"
	"time"

	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/ua"
)

// Option configures Dial.
type Option func(*config)

// config is what the options set. The zero value is secure: no policy means the most
// secure one offered other than None, and a server certificate is checked unless the
// caller says otherwise.
type config struct {
	policyURI string
	mode      ua.MessageSecurityMode

	cert     []byte // DER, leaf first
	key      crypto.Signer
	appURI   string
	appName  string
	trust    *pki.PKI
	insecure bool

	identity identity

	sessionName    string
	sessionTimeout time.Duration
	requestTimeout time.Duration
	lifetime       time.Duration
	keepAlive      time.Duration
	backoff        Backoff
	onRetry        func(error, time.Duration)
	cache          *EndpointCache
	failover       []string // endpoint URLs of a redundant set (failover.go)
	levelWatch     time.Duration
	standby        time.Duration // Standby's interval; zero without a standby
}

func defaultConfig() config {
	return config{
		sessionName:    "uastack client",
		sessionTimeout: time.Minute,
		requestTimeout: 10 * time.Second,
		appURI:         "urn:uastack:client",
		appName:        "uastack client",
		identity:       identity{kind: ua.UserTokenTypeAnonymous},
	}
}

// Security chooses the endpoint by SecurityPolicyUri and mode. Without it the most
// secure endpoint other than None is chosen; None must be named here.
func Security(policyURI string, mode ua.MessageSecurityMode) Option {
	return func(c *config) { c.policyURI, c.mode = policyURI, mode }
}

// Certificate sets the application instance certificate (DER, the leaf first, issuers may
// follow) and its private key, needed for any policy other than None. The client keeps
// references to both; the caller must not modify them.
func Certificate(der []byte, key crypto.Signer) Option {
	return func(c *config) { c.cert, c.key = der, key }
}

// Application sets the ApplicationUri and name sent in CreateSession. The URI must match
// the certificate's subjectAltName for servers that check it.
func Application(uri, name string) Option {
	return func(c *config) { c.appURI, c.appName = uri, name }
}

// TrustStore validates the server's certificate against p (Part 4 §6.1.3), as a server
// certificate for the host of the URL and the endpoint's ApplicationUri.
func TrustStore(p *pki.PKI) Option { return func(c *config) { c.trust = p } }

// InsecureSkipVerify accepts any server certificate. The channel is still encrypted, but
// to whoever answers: for tests and first contact only.
func InsecureSkipVerify() Option { return func(c *config) { c.insecure = true } }

// Anonymous logs in with an AnonymousIdentityToken (the default).
func Anonymous() Option {
	return func(c *config) { c.identity = identity{kind: ua.UserTokenTypeAnonymous} }
}

// UserName logs in with a UserNameIdentityToken. The password is encrypted for the
// server under the user token policy's SecurityPolicy (Part 4 §7.41.2.2); a policy of
// None is accepted only on a SignAndEncrypt channel.
func UserName(name, password string) Option {
	return func(c *config) {
		c.identity = identity{kind: ua.UserTokenTypeUserName, user: name, password: []byte(password)}
	}
}

// X509Identity logs in with an X509IdentityToken: der is the user certificate (DER), key
// signs the server certificate and nonce to prove possession (Part 4 §5.6.3).
func X509Identity(der []byte, key crypto.Signer) Option {
	return func(c *config) {
		c.identity = identity{kind: ua.UserTokenTypeCertificate, cert: der, key: key}
	}
}

// SessionName sets the SessionName of CreateSession.
func SessionName(name string) Option { return func(c *config) { c.sessionName = name } }

// SessionTimeout sets the requested session timeout; the server revises it. Default 1 min.
func SessionTimeout(d time.Duration) Option { return func(c *config) { c.sessionTimeout = d } }

// RequestTimeout bounds a call whose context has no deadline, and is sent as the
// TimeoutHint. Default 10 s.
func RequestTimeout(d time.Duration) Option { return func(c *config) { c.requestTimeout = d } }

// KeepAlive sets how long the session may stay idle before the client reads the
// server's state to keep it alive (and to notice a lost connection). Zero means half
// the revised session timeout; a negative value turns keep-alives off.
func KeepAlive(d time.Duration) Option { return func(c *config) { c.keepAlive = d } }

// ServiceLevelWatch sets how often a client with a Failover list reads its server's
// ServiceLevel (Part 5 §6.3.34) to move before the server goes: at Maintenance (0) or
// NoData (1) it moves its session to the best server of the list, and when Degraded
// (2-199) to one that is healthy (200-255). Zero means every 2 s; a negative value turns
// the watch off, and the client moves only when its server is lost.
func ServiceLevelWatch(d time.Duration) Option { return func(c *config) { c.levelWatch = d } }

// TokenLifetime sets the requested SecureChannel token lifetime; zero means one hour.
func TokenLifetime(d time.Duration) Option { return func(c *config) { c.lifetime = d } }

// WithBackoff sets the backoff between connection attempts.
func WithBackoff(b Backoff) Option { return func(c *config) { c.backoff = b } }

// OnRetry sets f to be called before each wait between connection attempts with the
// error of the failed attempt and the delay about to be slept (for logs and metrics). f
// runs on the connecting goroutine and must not call the Client.
func OnRetry(f func(err error, delay time.Duration)) Option {
	return func(c *config) { c.onRetry = f }
}

// WithEndpointCache shares a cache of GetEndpoints answers between clients, so that
// thousands of sessions to one server ask once.
func WithEndpointCache(ec *EndpointCache) Option { return func(c *config) { c.cache = ec } }
