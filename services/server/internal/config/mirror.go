package config

import (
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"time"
)

// Mirror is the NATS JetStream mirror of a HotAndMirrored redundant set (issue 19):
// where the servers of the set keep their sessions and subscriptions, so that a client
// of a server that fails carries on at another.
type Mirror struct {
	// URLs of NATS servers (nats://host:port; any servers of one NATS cluster). Empty
	// (the default): no mirror, a lone server.
	URLs []string `koanf:"urls"`
	// Cluster names the redundant set: its servers share it, and it names the set's
	// buckets and stream in JetStream. Default "uastack".
	Cluster string `koanf:"cluster"`
	// Key is the cluster key, 32 bytes in standard base64, or KeyFile a file holding
	// it: every record is sealed and authenticated with it (XChaCha20-Poly1305), and
	// every server of the set needs the same. One of them is required with urls.
	Key     string `koanf:"key" log:"secret"`
	KeyFile string `koanf:"keyFile"`
	// Credentials is a NATS credentials file (user JWT and nkey seed), NKeySeedFile a
	// file holding an nkey seed, Token a NATS token, User and Password a NATS user;
	// at most one way.
	Credentials  string `koanf:"credentials" log:"secret"`
	NKeySeedFile string `koanf:"nkeySeedFile"`
	Token        string `koanf:"token" log:"secret"`
	User         string `koanf:"user"`
	Password     string `koanf:"password" log:"secret"`
	// TLSCA verifies the NATS servers' certificates; TLSCert and TLSKey are this
	// server's client certificate for NATS, when NATS asks for one.
	TLSCA   string `koanf:"tlsCa"`
	TLSCert string `koanf:"tlsCert"`
	TLSKey  string `koanf:"tlsKey"`
	// Replicas of the set's buckets and stream in a NATS cluster: 1 (the default) for
	// one NATS server, 3 for a cluster of three or more.
	Replicas int `koanf:"replicas"`
	// SendWait bounds how long a Publish response waits for the NotificationMessages
	// it carries to be kept; past it the mirror counts as degraded and the response
	// leaves. Default 2s. Timeout bounds each request to NATS. Default 5s.
	SendWait time.Duration `koanf:"sendWait"`
	Timeout  time.Duration `koanf:"timeout"`
	// BatchWindow: the publishing cycles due within it of cycles whose messages the
	// engine had to wait for wait until it ends and go out together, up to this much
	// late, their messages one write to NATS. Sampling is not held. Default 5ms; 0
	// writes every cycle at once.
	BatchWindow time.Duration `koanf:"batchWindow"`
	// MaxBytes bounds the set's subscription stream (default 1 GiB), MaxAge how long
	// a subscription whose server died is kept for its session to come back
	// (default 1h).
	MaxBytes int           `koanf:"maxBytes"`
	MaxAge   time.Duration `koanf:"maxAge"`
	// Namespaces are the URIs of the namespaces whose values are mirrored: a value a
	// client writes to one of their nodes on one server is written on every server of
	// the set, and a server that starts takes the values written before. Empty (the
	// default): none.
	Namespaces []string `koanf:"namespaces"`
}

// Enabled reports whether the server mirrors its sessions (mirror.urls is set).
func (m Mirror) Enabled() bool { return len(m.URLs) > 0 }

func defaultMirror() Mirror {
	return Mirror{Cluster: "uastack", Replicas: 1, SendWait: 2 * time.Second, Timeout: 5 * time.Second,
		BatchWindow: 5 * time.Millisecond, MaxBytes: 1 << 30, MaxAge: time.Hour}
}

// ClusterKey returns the cluster key of mirror.key or mirror.keyFile.
func (m Mirror) ClusterKey() ([]byte, error) {
	text, what := m.Key, "mirror.key"
	if m.KeyFile != "" {
		b, err := os.ReadFile(m.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("mirror.keyFile: %w", err)
		}
		text, what = strings.TrimSpace(string(b)), "mirror.keyFile"
	}
	key, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%s: want 32 bytes in standard base64 (openssl rand -base64 32)", what)
	}
	return key, nil
}

func (c *Config) validateMirror(ps *problems) {
	m := c.Mirror
	if !m.Enabled() {
		return
	}
	for i, u := range m.URLs {
		if !strings.Contains(u, "://") {
			ps.add(fmt.Sprintf("mirror.urls[%d]", i), "must be a URL such as nats://127.0.0.1:4222, got %q", u)
		}
	}
	if m.Cluster == "" || strings.ContainsAny(m.Cluster, ".*> \t") {
		ps.add("mirror.cluster", "must be a name without dots, wildcards or spaces, got %q", m.Cluster)
	}
	switch {
	case m.Key == "" && m.KeyFile == "":
		ps.add("mirror.key", "a cluster key (mirror.key or mirror.keyFile) is required with mirror.urls")
	case m.Key != "" && m.KeyFile != "":
		ps.add("mirror.key", "set mirror.key or mirror.keyFile, not both")
	default:
		if _, err := m.ClusterKey(); err != nil {
			ps.add("mirror.key", "%v", err)
		}
	}
	ways := 0
	for _, set := range []bool{m.Credentials != "", m.NKeySeedFile != "", m.Token != "", m.User != ""} {
		if set {
			ways++
		}
	}
	if ways > 1 {
		ps.add("mirror.credentials", "use one of mirror.credentials, mirror.nkeySeedFile, mirror.token, mirror.user")
	}
	if (m.TLSCert == "") != (m.TLSKey == "") {
		ps.add("mirror.tlsCert", "mirror.tlsCert and mirror.tlsKey go together")
	}
	if m.Replicas != 1 && m.Replicas != 3 && m.Replicas != 5 {
		ps.add("mirror.replicas", "must be 1, 3 or 5, got %d", m.Replicas)
	}
	ps.positive("mirror.sendWait", m.SendWait)
	ps.positive("mirror.timeout", m.Timeout)
	ps.notNegative("mirror.batchWindow", m.BatchWindow)
	ps.positive("mirror.maxAge", m.MaxAge)
	for i, u := range m.Namespaces {
		if strings.TrimSpace(u) == "" || u == "http://opcfoundation.org/UA/" {
			ps.add(fmt.Sprintf("mirror.namespaces[%d]", i), "must be the URI of a namespace other than namespace 0, got %q", u)
		}
	}
	if m.MaxBytes < 1<<20 {
		ps.add("mirror.maxBytes", "must be at least 1 MiB, got %d", m.MaxBytes)
	}
}
