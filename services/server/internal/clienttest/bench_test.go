package clienttest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	gua "github.com/gopcua/opcua/ua"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/services/server/internal/config"
	"uastack.dev/services/server/internal/server"
)

// serverEnv makes the test binary run the server instead of the tests: the Read
// benchmark starts the server in a child process, so that the process CPU time it
// measures is the client's alone.
const serverEnv = "UASTACK_CLIENTTEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) != "" {
		if err := serveChild(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// serveChild runs the server on 127.0.0.1:0, prints its address on stdout and serves
// until stdin closes (the parent ended).
func serveChild() error {
	dir, err := os.MkdirTemp("", "clienttest-server")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.Endpoint.ListenAddress = "127.0.0.1:0"
	cfg.Endpoint.EndpointURL = "opc.tcp://127.0.0.1:0"
	cfg.Endpoint.Hostnames = []string{"127.0.0.1"}
	cfg.Application.ApplicationURI = "urn:127.0.0.1:uastack:clienttest"
	cfg.Security.PKIDir = filepath.Join(dir, "pki")
	cfg.Limits.MaxQueuedRequestCount = 10000
	cfg.Security.AutoAcceptUntrusted = true // the benchmark's client certificates
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return server.Run(ctx, cfg, log, func(a net.Addr) { fmt.Println(a.String()) })
}

// childServer starts the server process and returns its URL.
func childServer(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("server process: %v", err)
	}
	return "opc.tcp://" + strings.TrimSpace(line)
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// inFlight is the number of goroutines issuing Reads at once on one session.
const inFlight = 50

// runReads runs b.N single-value Reads from inFlight goroutines with read and reports
// the client's CPU time per Read.
func runReads(b *testing.B, read func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
		next = make(chan struct{}, inFlight)
	)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for range inFlight {
		wg.Go(func() {
			for range next {
				if err := read(ctx); err != nil {
					mu.Lock()
					ferr = err
					mu.Unlock()
				}
			}
		})
	}
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	cpu := cpuTime() - cpu0
	b.StopTimer()
	if ferr != nil {
		b.Fatal(ferr)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e3, "client-cpu-µs/read")
}

// BenchmarkRead compares our client with gopcua's reading one value from the same
// server process, inFlight requests in flight on one session, over None and
// Basic256Sha256 SignAndEncrypt. allocs/op and client-cpu-µs/read are the client's alone.
//
//	go test -run '^$' -bench BenchmarkRead -benchtime 20000x ./internal/clienttest/
func BenchmarkRead(b *testing.B) {
	url := childServer(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := testIdentities(b)
	node := codec.NewNumericNodeId(0, id2259)
	gnode := gua.NewNumericNodeID(0, id2259)

	for _, sec := range securities {
		b.Run(sec.name+"/uastack", func(b *testing.B) {
			c, err := client.Dial(ctx, url, client.Security(sec.policy, sec.mode),
				client.Certificate(id.appDER, id.appKey), client.Application(appURI, "bench"), client.InsecureSkipVerify())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(ctx)
			runReads(b, func(ctx context.Context) error {
				dv, err := c.ReadValue(ctx, node)
				if err == nil && dv.Status.IsBad() {
					err = dv.Status
				}
				return err
			})
		})
		b.Run(sec.name+"/gopcua", func(b *testing.B) {
			opts := []opcua.Option{opcua.AutoReconnect(false), opcua.RequestTimeout(time.Minute)}
			if sec.policy == policy.URINone {
				opts = append(opts, opcua.SecurityMode(gua.MessageSecurityModeNone))
			} else {
				eps, err := opcua.GetEndpoints(ctx, url)
				if err != nil {
					b.Fatal(err)
				}
				ep, err := opcua.SelectEndpoint(eps, sec.policy, gua.MessageSecurityModeSignAndEncrypt)
				if err != nil {
					b.Fatal(err)
				}
				opts = append(opts, opcua.SecurityFromEndpoint(ep, gua.UserTokenTypeAnonymous),
					opcua.Certificate(id.appDER), opcua.PrivateKey(id.appKey), opcua.ApplicationURI(appURI))
			}
			c, err := opcua.NewClient(url, opts...)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Connect(ctx); err != nil {
				b.Fatal(err)
			}
			defer c.Close(ctx)
			runReads(b, func(ctx context.Context) error {
				resp, err := c.Read(ctx, &gua.ReadRequest{
					NodesToRead:        []*gua.ReadValueID{{NodeID: gnode, AttributeID: gua.AttributeIDValue}},
					TimestampsToReturn: gua.TimestampsToReturnNeither,
				})
				if err == nil && resp.Results[0].Status != gua.StatusOK {
					err = resp.Results[0].Status
				}
				return err
			})
		})
	}
}
