package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"uastack.dev/pkg/pki"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// The server under test is the real uastack server, built once per test binary and
// run as a child process: the tools module cannot import its internal packages.
var (
	buildOnce sync.Once
	serverBin string
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "uacli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "server")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildServer compiles uastack.dev/services/server (the go.work workspace resolves it).
func buildServer(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		out, err := exec.Command(goBin, "build", "-o", serverBin, "uastack.dev/services/server").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build server: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return serverBin
}

// testServer is a running server process.
type testServer struct {
	url string
	pki string // its PKI folder
}

// serverUser is the account the test server knows: it holds the Operator role,
// which may write Demo.Protected.Setpoint.
const (
	serverUser     = "operator"
	serverPassword = "correct horse battery"
)

// startServer runs the server on 127.0.0.1 port 0 with a fresh PKI and one user;
// tokens, if given, replaces the accepted identity token types. It is stopped
// with SIGINT when the test ends.
func startServer(t *testing.T, tokens ...string) *testServer {
	t.Helper()
	return startServerTrusting(t, nil, tokens...)
}

// startServerTrusting is startServer with certificates (DER) put into the server's
// trusted store before it starts.
func startServerTrusting(t *testing.T, trusted []*x509.Certificate, tokens ...string) *testServer {
	t.Helper()
	bin := buildServer(t)
	dir := t.TempDir()
	trustedDir := filepath.Join(dir, "pki", "trusted", "certs")
	require.NoError(t, os.MkdirAll(trustedDir, 0o700))
	for i, c := range trusted {
		require.NoError(t, os.WriteFile(filepath.Join(trustedDir, fmt.Sprintf("trusted%d.der", i)), c.Raw, 0o600))
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(serverPassword), bcrypt.MinCost)
	require.NoError(t, err)
	cfg := fmt.Sprintf(`endpoint:
  listenAddress: 127.0.0.1:0
  endpointUrl: opc.tcp://127.0.0.1:4840
  hostnames: [127.0.0.1]
security:
  pkiDir: %s
  users:
    - name: %s
      passwordHash: '%s'
      roles: [Operator]
`, filepath.Join(dir, "pki"), serverUser, hash)
	if len(tokens) > 0 {
		cfg += "  userTokenPolicies:\n"
		for _, tok := range tokens {
			cfg += "    - type: " + tok + "\n      securityPolicy: Basic256Sha256\n"
		}
	}
	cfgFile := filepath.Join(dir, "server.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(cfg), 0o600))

	cmd := exec.Command(bin, "--config", cfgFile)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	addr := make(chan string, 1)
	var logs bytes.Buffer
	var logMu sync.Mutex
	go func() {
		defer close(done)
		listening := regexp.MustCompile(`msg=listening address=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			logs.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
	}()
	select {
	case a := <-addr:
		return &testServer{url: "opc.tcp://" + a, pki: filepath.Join(dir, "pki")}
	case <-done:
	case <-time.After(20 * time.Second):
	}
	logMu.Lock()
	defer logMu.Unlock()
	t.Fatalf("server did not start listening:\n%s", logs.String())
	return nil
}

// result is one uacli run.
type result struct {
	code           int
	stdout, stderr string
}

// uacli runs the command in-process with the given arguments.
func uacli(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	t.Logf("uacli %s -> %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return result{code, out.String(), errOut.String()}
}

// noneArgs are the global flags of an anonymous session over SecurityPolicy None.
func noneArgs(srv *testServer, pkiDir string) []string {
	return []string{"--url", srv.url, "--pki", pkiDir, "--policy", "None"}
}

func TestEndpoints(t *testing.T) {
	srv := startServer(t)
	pkiDir := t.TempDir()

	r := uacli(t, "--url", srv.url, "--pki", pkiDir, "endpoints")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `Basic256Sha256\s+SignAndEncrypt\s+\d+\s+Anonymous,UserName,Certificate`, r.stdout)
	require.Regexp(t, `None\s+None\s+0`, r.stdout)

	r = uacli(t, "--url", srv.url, "--json", "endpoints")
	require.Equal(t, 0, r.code, r.stderr)
	var eps []endpointJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &eps))
	require.Len(t, eps, 5) // None, and Sign and SignAndEncrypt for two policies
	modes := map[string]bool{}
	for _, ep := range eps {
		modes[ep.SecurityPolicy+"/"+ep.SecurityMode] = true
		require.Len(t, ep.Thumbprint, 40)
		require.NotEmpty(t, ep.UserTokens)
	}
	require.True(t, modes["None/None"] && modes["Basic256Sha256/SignAndEncrypt"] && modes["Aes256_Sha256_RsaPss/Sign"], "%v", modes)
}

func TestBrowse(t *testing.T) {
	srv := startServer(t)
	g := noneArgs(srv, t.TempDir())

	r := uacli(t, append(g, "browse")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "i=85\n")
	require.Regexp(t, `(?m)^  1:Demo \(Object, Organizes\) ns=1;s=Demo$`, r.stdout)
	require.Regexp(t, `(?m)^  Server \(Object, Organizes\) i=2253$`, r.stdout)
	require.NotContains(t, r.stdout, "Demo.Scalar_Int32", "depth 1 stops at the children")

	r = uacli(t, append(g, "browse", "--flat", "--depth", "2", "nsu=urn:uastack:demo;s=Demo")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^ns=1;s=Demo.Scalar_Int32\s+1:Scalar_Int32\s+Variable\s+Organizes\s+BaseDataVariableType\s+ns=1;s=Demo$`, r.stdout)
	require.Regexp(t, `(?m)^ns=1;s=Demo.Simulation.Sine\s+1:Sine\s+Variable\s+Organizes\s+\S+\s+ns=1;s=Demo.Simulation$`, r.stdout)

	// Two references per call: the rest comes through BrowseNext, and the result is
	// the same as in one call.
	whole := uacli(t, append(g, "--json", "browse", "ns=1;s=Demo")...)
	paged := uacli(t, append(g, "--json", "browse", "--max", "2", "ns=1;s=Demo")...)
	require.Equal(t, 0, whole.code, whole.stderr)
	require.Equal(t, 0, paged.code, paged.stderr)
	var a, b struct {
		Node       string      `json:"node"`
		References []browseRow `json:"references"`
	}
	require.NoError(t, json.Unmarshal([]byte(whole.stdout), &a))
	require.NoError(t, json.Unmarshal([]byte(paged.stdout), &b))
	require.Equal(t, "ns=1;s=Demo", a.Node)
	require.Greater(t, len(a.References), 20)
	require.Equal(t, a.References, b.References)
	var add *browseRow
	for i := range a.References {
		if a.References[i].NodeID == "ns=1;s=Demo.Add" {
			add = &a.References[i]
		}
	}
	require.NotNil(t, add)
	require.Equal(t, "Method", add.NodeClass)
	require.Equal(t, "HasComponent", add.ReferenceType)
}

func TestReadWriteCall(t *testing.T) {
	srv := startServer(t)
	g := noneArgs(srv, t.TempDir())

	// Server_ServerStatus_State is Running (0); the demo Int32 starts at -3.
	r := uacli(t, append(g, "read", "i=2259", "nsu=urn:uastack:demo;s=Demo.Scalar_Int32")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^i=2259\s+Value\s+0\s+Int32\s+Good\s`, r.stdout)
	require.Regexp(t, `(?m)^ns=1;s=Demo.Scalar_Int32\s+Value\s+-3\s+Int32\s+Good\s`, r.stdout)

	// A structure is named by its DataType and shown in JSON; a NodeClass by name.
	r = uacli(t, append(g, "read", "i=2256")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^i=2256\s+Value\s+\{.*"ProductUri":"urn:uastack.dev:server".*\}\s+ServerStatusDataType\s+Good\s`, r.stdout)
	r = uacli(t, append(g, "read", "--attr", "NodeClass", "ns=1;s=Demo.Add")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^ns=1;s=Demo.Add\s+NodeClass\s+Method\s+Int32\s+Good\s`, r.stdout)

	r = uacli(t, append(g, "--json", "read", "--attr", "DisplayName", "Objects")...)
	require.Equal(t, 0, r.code, r.stderr)
	var dn struct {
		Results []struct {
			NodeID, Attribute, Status string
			Value                     struct {
				UaType int
				Value  struct{ Text string }
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &dn))
	require.Len(t, dn.Results, 1)
	require.Equal(t, "i=85", dn.Results[0].NodeID)
	require.Equal(t, "DisplayName", dn.Results[0].Attribute)
	require.Equal(t, 21, dn.Results[0].Value.UaType) // LocalizedText
	require.Equal(t, "Objects", dn.Results[0].Value.Value.Text)

	// A negative value is an argument, not a flag; the type comes from the DataType.
	r = uacli(t, append(g, "write", "ns=1;s=Demo.Scalar_Int32", "-42")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^ns=1;s=Demo.Scalar_Int32\s+-42\s+Int32\s+Good$`, r.stdout)
	require.Equal(t, int64(-42), readJSONValue(t, g, "ns=1;s=Demo.Scalar_Int32"))

	r = uacli(t, append(g, "write", "ns=1;s=Demo.Array_Double", "[1.25, -2, 1e3]")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []any{1.25, -2.0, 1000.0}, readJSONValue(t, g, "ns=1;s=Demo.Array_Double"))

	r = uacli(t, append(g, "write", "--range", "1", "ns=1;s=Demo.Array_Double", "7.5")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []any{1.25, 7.5, 1000.0}, readJSONValue(t, g, "ns=1;s=Demo.Array_Double"))

	// A value that does not parse is a usage error; one of the wrong type is the
	// server's BadTypeMismatch.
	r = uacli(t, append(g, "write", "ns=1;s=Demo.Scalar_Int32", "forty")...)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, `"forty" is not a valid Int32`)
	r = uacli(t, append(g, "write", "--type", "String", "ns=1;s=Demo.Scalar_Int32", "forty")...)
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "BadTypeMismatch")
	require.Equal(t, int64(-42), readJSONValue(t, g, "ns=1;s=Demo.Scalar_Int32"))

	// An unknown node is a per-item failure: shown, and exit code 1.
	r = uacli(t, append(g, "read", "ns=1;s=Demo.NoSuchNode", "i=2259")...)
	require.Equal(t, exitFailure, r.code)
	require.Regexp(t, `(?m)^ns=1;s=Demo.NoSuchNode\s+Value\s+null\s+Null\s+BadNodeIdUnknown`, r.stdout)
	require.Contains(t, r.stderr, "BadNodeIdUnknown: no such node")

	// Demo/Add takes two Doubles, as its InputArguments say.
	r = uacli(t, append(g, "call", "ns=1;s=Demo", "ns=1;s=Demo.Add", "1.5", "-4")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "ns=1;s=Demo ns=1;s=Demo.Add: Good")
	require.Regexp(t, `(?m)^0\s+-2.5\s+Double$`, r.stdout)

	r = uacli(t, append(g, "--json", "call", "nsu=urn:uastack:demo;s=Demo", "nsu=urn:uastack:demo;s=Demo.Add", "40", "2")...)
	require.Equal(t, 0, r.code, r.stderr)
	var call struct {
		Status          string
		OutputArguments []struct {
			UaType int
			Value  float64
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &call))
	require.Equal(t, "Good", call.Status)
	require.Len(t, call.OutputArguments, 1)
	require.Equal(t, 11, call.OutputArguments[0].UaType) // Double
	require.Equal(t, 42.0, call.OutputArguments[0].Value)

	r = uacli(t, append(g, "call", "ns=1;s=Demo", "ns=1;s=Demo.Add", "1")...)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "takes 2 arguments (a Double, b Double), got 1")

	// Echo takes BaseDataType: the type is guessed from the text, or named.
	r = uacli(t, append(g, "call", "--types", "UInt16", "ns=1;s=Demo", "ns=1;s=Demo.Echo", "7")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^0\s+7\s+UInt16$`, r.stdout)
}

// readJSONValue reads the Value of node with --json and returns the JSON value.
func readJSONValue(t *testing.T, g []string, node string) any {
	t.Helper()
	r := uacli(t, append(g, "--json", "read", node)...)
	require.Equal(t, 0, r.code, r.stderr)
	var doc struct {
		Results []struct {
			Value struct{ Value any }
		}
	}
	d := json.NewDecoder(strings.NewReader(r.stdout))
	d.UseNumber()
	require.NoError(t, d.Decode(&doc))
	require.Len(t, doc.Results, 1)
	switch v := doc.Results[0].Value.Value.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, err := v.Float64()
		require.NoError(t, err)
		return f
	case []any:
		for i, x := range v {
			if n, ok := x.(json.Number); ok {
				f, err := n.Float64()
				require.NoError(t, err)
				v[i] = f
			}
		}
		return v
	default:
		return v
	}
}

// TestUntrustedCertificates walks the first secured contact as a user would: uacli
// refuses the server's certificate and says how to trust it; then the server refuses
// uacli's and the message names the file to move on the server; after both moves the
// SignAndEncrypt session works.
func TestUntrustedCertificates(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	pkiDir := t.TempDir()
	g := []string{"--url", srv.url, "--pki", pkiDir, "--policy", "Basic256Sha256", "--mode", "SignAndEncrypt"}

	r := uacli(t, append(g, "read", "i=2259")...)
	require.Equal(t, exitFailure, r.code)
	m := regexp.MustCompile(`uacli cert trust ([0-9A-F]{40})`).FindStringSubmatch(r.stderr)
	require.NotNil(t, m, r.stderr)
	serverThumb := m[1]
	require.Contains(t, r.stderr, "BadCertificateUntrusted: uacli does not trust the server's certificate "+serverThumb)
	require.Contains(t, r.stderr, filepath.Join(pkiDir, "rejected", "certs", "uastack server ["+serverThumb+"].der"))
	require.FileExists(t, filepath.Join(pkiDir, "rejected", "certs", "uastack server ["+serverThumb+"].der"))

	r = uacli(t, "--pki", pkiDir, "cert", "trust", serverThumb)
	require.Equal(t, 0, r.code, r.stderr)
	require.FileExists(t, filepath.Join(pkiDir, "trusted", "certs", "uastack server ["+serverThumb+"].der"))
	require.NoFileExists(t, filepath.Join(pkiDir, "rejected", "certs", "uastack server ["+serverThumb+"].der"))

	r = uacli(t, append(g, "read", "i=2259")...)
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "BadSecurityChecksFailed")
	m = regexp.MustCompile(`does not trust uacli's certificate ([0-9A-F]{40})`).FindStringSubmatch(r.stderr)
	require.NotNil(t, m, r.stderr)
	ownThumb := m[1]
	file := "uacli [" + ownThumb + "].der"
	require.Contains(t, r.stderr, "move 'pki/rejected/certs/"+file+"' to pki/trusted/certs")

	// The server copied uacli's certificate to its rejected store under that name.
	rejected := filepath.Join(srv.pki, "rejected", "certs", file)
	require.Eventually(t, func() bool { _, err := os.Stat(rejected); return err == nil }, 5*time.Second, 50*time.Millisecond)
	require.NoError(t, os.Rename(rejected, filepath.Join(srv.pki, "trusted", "certs", file)))

	// The server polls its trusted store every few seconds.
	deadline := time.Now().Add(12 * time.Second)
	for {
		r = uacli(t, append(g, "read", "i=2259")...)
		if r.code == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^i=2259\s+Value\s+0\s+Int32\s+Good\s`, r.stdout)

	r = uacli(t, "--pki", pkiDir, "--json", "cert", "list")
	require.Equal(t, 0, r.code, r.stderr)
	var list struct {
		Certificates []certRow
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	stores := map[string]string{}
	for _, c := range list.Certificates {
		stores[c.Thumbprint] = c.Store
	}
	require.Equal(t, map[string]string{ownThumb: "own", serverThumb: "trusted"}, stores)

	// reject moves it back, and the next connection is refused again.
	r = uacli(t, "--pki", pkiDir, "cert", "reject", serverThumb[:10])
	require.Equal(t, 0, r.code, r.stderr)
	r = uacli(t, append(g, "read", "i=2259")...)
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "BadCertificateUntrusted")
}

// TestUserIdentity logs in with a user name: the password comes from a flag or from
// UASTACK_PASSWORD, a wrong one is named as such, and the user's role decides a write.
func TestUserIdentity(t *testing.T) {
	srv := startServer(t)
	pkiDir := t.TempDir()
	// The password is encrypted to the server's certificate even over None, so uacli
	// must trust it: copy the server's own certificate file in.
	ownCerts, err := filepath.Glob(filepath.Join(srv.pki, "own", "certs", "*.der"))
	require.NoError(t, err)
	require.Len(t, ownCerts, 1)
	r := uacli(t, "--pki", pkiDir, "cert", "trust", ownCerts[0])
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "trusted ")

	g := noneArgs(srv, pkiDir)
	setpoint := "ns=1;s=Demo.Protected.Setpoint"

	r = uacli(t, append(g, "write", setpoint, "12.5")...)
	require.Equal(t, exitFailure, r.code, "anonymous may not write the setpoint")
	require.Contains(t, r.stderr, "BadUserAccessDenied")

	r = uacli(t, append(g, "--user", serverUser, "--password", "wrong", "read", "i=2259")...)
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "BadUserAccessDenied")
	require.Contains(t, r.stderr, `the server refused user "operator" with that password: check --user and --password`)

	t.Setenv("UASTACK_PASSWORD", serverPassword)
	r = uacli(t, append(g, "--user", serverUser, "write", setpoint, "12.5")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 12.5, readJSONValue(t, g, setpoint))
}

// userCert makes a user certificate (signing, clientAuth) and writes it as PEM with its
// PKCS#8 key; it returns the certificate and the two files.
func userCert(t *testing.T, cn string) (*x509.Certificate, string, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, cn+".pem"), filepath.Join(dir, cn+".key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600))
	return cert, certFile, keyFile
}

// TestX509Identity logs in with a user certificate the server trusts, and is told
// which file to move on the server for one it does not.
func TestX509Identity(t *testing.T) {
	t.Parallel()
	trusted, certFile, keyFile := userCert(t, "uacli-user")
	stranger, strangerCert, strangerKey := userCert(t, "uacli-stranger")
	srv := startServerTrusting(t, []*x509.Certificate{trusted})
	pkiDir := t.TempDir()
	ownCerts, err := filepath.Glob(filepath.Join(srv.pki, "own", "certs", "*.der"))
	require.NoError(t, err)
	require.Len(t, ownCerts, 1)
	r := uacli(t, "--pki", pkiDir, "cert", "trust", ownCerts[0])
	require.Equal(t, 0, r.code, r.stderr)
	g := noneArgs(srv, pkiDir)

	r = uacli(t, append(g, "--cert", certFile, "--key", keyFile, "read", "i=2259")...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^i=2259\s+Value\s+0\s+Int32\s+Good\s`, r.stdout)

	r = uacli(t, append(g, "--cert", strangerCert, "--key", strangerKey, "read", "i=2259")...)
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "BadIdentityTokenRejected")
	name := "uacli-stranger [" + pki.Thumbprint(stranger) + "].der"
	require.Contains(t, r.stderr, "the server refused the user certificate "+pki.Thumbprint(stranger))
	require.Contains(t, r.stderr, "move 'pki/rejected/certs/"+name+"' to pki/trusted/certs")
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(srv.pki, "rejected", "certs", name))
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "the server keeps a copy under the name uacli gives")

	r = uacli(t, append(g, "--cert", certFile, "read", "i=2259")...)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "--cert and --key go together")
}

// TestIdentityTokenRejected: a server that accepts only user names; uacli says which
// token types are on offer.
func TestIdentityTokenRejected(t *testing.T) {
	srv := startServer(t, "username")
	r := uacli(t, append(noneArgs(srv, t.TempDir()), "read", "i=2259")...)
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "BadIdentityTokenRejected")
	require.Contains(t, r.stderr, "it offers: UserName (Basic256Sha256)")
}

// TestModeWithoutPolicy: --mode alone picks the best policy offered with that mode.
func TestModeWithoutPolicy(t *testing.T) {
	srv := startServer(t)
	g := defaultGlobals()
	g.url = srv.url
	e := &env{g: g, stdout: io.Discard, stderr: io.Discard}
	for _, tc := range []struct {
		mode ua.MessageSecurityMode
		want string
	}{
		{ua.MessageSecurityModeSign, policy.URIAes256Sha256RsaPss}, // level 50 beats Basic256Sha256's 40
		{ua.MessageSecurityModeSignAndEncrypt, policy.URIAes256Sha256RsaPss},
		{ua.MessageSecurityModeNone, policy.URINone},
	} {
		got, err := e.bestPolicy(t.Context(), tc.mode)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "mode %v", tc.mode)
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	r := uacli(t, "--url", "opc.tcp://"+addr, "--pki", t.TempDir(), "--policy", "None", "--timeout", "3s", "read", "i=2259")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "no server answers at opc.tcp://"+addr+" (connection refused): is the server running")
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "usage: uacli"},
		{[]string{"help"}, exitOK, "endpoints"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"--no-such-flag", "read"}, exitUsage, "flag provided but not defined"},
		{[]string{"read"}, exitUsage, "read needs at least one node"},
		{[]string{"read", "--attr", "Colour", "i=85"}, exitUsage, `unknown attribute "Colour"`},
		{[]string{"--policy", "Basic512", "read", "i=85"}, exitUsage, `unknown --policy "Basic512"`},
		{[]string{"read", "-h"}, exitOK, "usage: uacli read"},
		{[]string{"cert", "frob"}, exitUsage, `unknown cert sub-command "frob"`},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			args := append([]string{"--pki", t.TempDir()}, tc.args...)
			r := uacli(t, args...)
			require.Equal(t, tc.code, r.code)
			require.Contains(t, r.stdout+r.stderr, tc.want)
		})
	}
}

func TestCertCreate(t *testing.T) {
	t.Parallel()
	pkiDir := t.TempDir()
	r := uacli(t, "--pki", pkiDir, "--json", "cert", "create", "--hosts", "uacli.example,127.0.0.1")
	require.Equal(t, 0, r.code, r.stderr)
	var first certRow
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &first))
	require.Equal(t, "own", first.Store)
	require.Equal(t, filepath.Join(pkiDir, "own", "certs", "uacli ["+first.Thumbprint+"].der"), first.File)
	certs, err := readCertFile(first.File)
	require.NoError(t, err)
	require.Equal(t, []string{"uacli.example"}, certs[0].DNSNames)
	require.Equal(t, "127.0.0.1", certs[0].IPAddresses[0].String())
	require.Equal(t, applicationURI(), certs[0].URIs[0].String())

	// A second create keeps the certificate; --force replaces it.
	r = uacli(t, "--pki", pkiDir, "--json", "cert", "create")
	require.Equal(t, 0, r.code, r.stderr)
	var again certRow
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &again))
	require.Equal(t, first.Thumbprint, again.Thumbprint)
	r = uacli(t, "--pki", pkiDir, "--json", "cert", "create", "--force")
	require.Equal(t, 0, r.code, r.stderr)
	var fresh certRow
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &fresh))
	require.NotEqual(t, first.Thumbprint, fresh.Thumbprint)
	require.NoFileExists(t, first.File)
}
