package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"uastack.dev/services/mirror/natsnode"
)

// command is the mirror command running in the test's process.
type command struct {
	cancel context.CancelFunc
	done   chan error  // run's result
	lines  chan string // its output, line by line; closed once run has returned
	seen   []string    // the lines read so far, for failure messages
}

// startCommand runs the command with args and stops it at the end of the test.
func startCommand(t *testing.T, args ...string) *command {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	c := &command{cancel: cancel, done: make(chan error, 1), lines: make(chan string, 4096)}
	go func() {
		err := run(ctx, args, pw)
		_ = pw.Close()
		c.done <- err
	}()
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cancel()
		for range c.lines {
		}
	})
	return c
}

// await returns the submatches of the first line of output that matches re.
func (c *command) await(t *testing.T, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("the command ended before %q:\n%s", re, strings.Join(c.seen, "\n"))
			}
			c.seen = append(c.seen, line)
			if m := rx.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no %q within 30s:\n%s", re, strings.Join(c.seen, "\n"))
		}
	}
}

// stop cancels the command and returns run's result and the rest of its output.
func (c *command) stop(t *testing.T) (string, error) {
	t.Helper()
	c.cancel()
	var rest []string
	for line := range c.lines {
		rest = append(rest, line)
	}
	select {
	case err := <-c.done:
		return strings.Join(rest, "\n"), err
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not stop")
		return "", nil
	}
}

// TestRunServesAndStops runs the command as a user would on one machine, with a free
// port: the printed URL takes a JetStream client, and cancelling stops it cleanly.
func TestRunServesAndStops(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "store")
	c := startCommand(t, "--port", "0", "--data", data)
	c.await(t, `msg="data directory" path=`+regexp.QuoteMeta(data))
	url := c.await(t, `msg=listening client=(nats://127\.0\.0\.1:\d+) `)[1]
	c.await(t, `msg="JetStream ready"`)

	nc, err := nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b", Storage: jetstream.FileStorage})
	require.NoError(t, err)
	_, err = kv.Put(ctx, "k", []byte("v"))
	require.NoError(t, err)

	rest, err := c.stop(t)
	require.NoError(t, err)
	require.Contains(t, rest, `msg=stopped`)
	require.DirExists(t, filepath.Join(data, "jetstream"), "the store is where it was told")
}

// TestRunJoinsCluster joins the command's node to a running two-node cluster through
// one seed: an R3 bucket, which needs three JetStream servers, can then be made.
func TestRunJoinsCluster(t *testing.T) {
	t.Parallel()
	nodes, err := natsnode.StartCluster(t.TempDir(), 2, "plant")
	require.NoError(t, err)
	for _, n := range nodes {
		t.Cleanup(n.Shutdown)
	}
	c := startCommand(t, "--port", "0", "--data", t.TempDir(), "--name", "third",
		"--cluster-name", "plant", "--cluster-port", "0", "--routes", nodes[0].RouteURL())
	m := c.await(t, `msg=listening client=(\S+) name=third route=(nats-route://127\.0\.0\.1:\d+) cluster=plant`)
	c.await(t, `msg="JetStream ready"`)

	nc, err := nats.Connect(m[1])
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The meta leader learns of the third server from the route: until then an R3
	// bucket has too few peers.
	var kv jetstream.KeyValue
	require.Eventually(t, func() bool {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "r3", Storage: jetstream.FileStorage, Replicas: 3})
		return err == nil
	}, 15*time.Second, 50*time.Millisecond, "an R3 bucket across the cluster and the joined node")
	st, err := kv.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas)

	_, err = c.stop(t)
	require.NoError(t, err)
}

// TestRunTLS: with a certificate and a CA, the client port is TLS only and wants a
// client certificate the CA issued.
func TestRunTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	caCert, caKey := newCert(t, dir, "ca", nil, nil)
	newCert(t, dir, "server", caCert, caKey)
	newCert(t, dir, "client", caCert, caKey)
	c := startCommand(t, "--port", "0", "--data", t.TempDir(),
		"--tls-cert", filepath.Join(dir, "server.pem"), "--tls-key", filepath.Join(dir, "server.key"),
		"--tls-ca", filepath.Join(dir, "ca.pem"))
	url := c.await(t, `msg=listening client=(tls://127\.0\.0\.1:\d+) .*clientCertificates=true`)[1]

	nc, err := nats.Connect(url, nats.RootCAs(filepath.Join(dir, "ca.pem")),
		nats.ClientCert(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")))
	require.NoError(t, err)
	require.True(t, nc.TLSRequired())
	nc.Close()

	_, err = nats.Connect(url, nats.RootCAs(filepath.Join(dir, "ca.pem")), nats.NoReconnect())
	require.Error(t, err, "no client certificate")
	_, err = nats.Connect(strings.Replace(url, "tls://", "nats://", 1), nats.NoReconnect())
	require.Error(t, err, "no TLS")

	_, err = c.stop(t)
	require.NoError(t, err)
}

// newCert writes name.pem and name.key to dir: a CA when parent is nil, else a
// certificate for 127.0.0.1 that parent issued.
func newCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert, key
}

// TestRunRefusesBadFlags: a bad flag is an error that names it, before anything starts.
func TestRunRefusesBadFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", "many"}, "--port"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--cluster-port", "6222"}, "--routes"},
		{[]string{"--cluster-name", "plant"}, "--routes"},
		{[]string{"--tls-key", "k.pem"}, "--tls-cert"},
		{[]string{"--tls-cert", "c.pem"}, "--tls-key"},
		{[]string{"--tls-cert", filepath.Join(dir, "none.pem"), "--tls-key", filepath.Join(dir, "none.key")}, "--tls-cert"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--routes", "nats-route://nowhere"}, "nowhere"},
		{[]string{"stray"}, "stray"},
	} {
		args := append([]string{"--port", "0", "--data", dir}, tc.args...)
		err := run(context.Background(), args, io.Discard)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// TestDefaultDataDir: the store goes under the user's data folder, not the cache.
func TestDefaultDataDir(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		t.Skip("XDG_DATA_HOME is read on Linux and the BSDs only")
	}
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	require.Equal(t, filepath.Join(data, "uastack", "mirror"), defaultDataDir())
	t.Setenv("XDG_DATA_HOME", "relative/ignored")
	t.Setenv("HOME", data)
	require.Equal(t, filepath.Join(data, ".local", "share", "uastack", "mirror"), defaultDataDir())
}
