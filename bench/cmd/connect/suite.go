package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"hash"
	"strconv"
	"time"

	"uastack.dev/bench/internal/drive"
	"uastack.dev/bench/internal/proc"
	"uastack.dev/bench/internal/report"
	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/pkg/client"
	"uastack.dev/pkg/transport/policy"
	"uastack.dev/pkg/ua"
)

// secured is one SecurityPolicy × mode the server offers by default.
type secured struct {
	name   string
	policy string
	mode   ua.MessageSecurityMode
}

var modes = []secured{
	{"None", policy.URINone, ua.MessageSecurityModeNone},
	{"Basic256Sha256 Sign", policy.URIBasic256Sha256, ua.MessageSecurityModeSign},
	{"Basic256Sha256 SignAndEncrypt", policy.URIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt},
	{"Aes256Sha256RsaPss Sign", policy.URIAes256Sha256RsaPss, ua.MessageSecurityModeSign},
	{"Aes256Sha256RsaPss SignAndEncrypt", policy.URIAes256Sha256RsaPss, ua.MessageSecurityModeSignAndEncrypt},
}

// Column names.
const (
	colRate      = "connects/s"
	colServerCPU = "server CPU/connect"
	colClientCPU = "client CPU/connect"
	colAllocs    = "client allocs/connect"
	colBytes     = "client KiB/connect"
	colP50       = "p50"
	colRaw       = "RSA ceiling/connect"
	colRatio     = "server CPU / RSA ceiling"
)

func run(ctx context.Context, o options, dir string, prog *report.Progress) (*report.Report, error) {
	defer prog.Done()
	r := report.New("connect")
	prog.Stage("building the server")
	bin, ident, err := uaserver.Prepare(ctx, dir, "")
	if err != nil {
		return nil, err
	}
	defer ident.PKI.Close()
	// The suite measures what a session costs to establish, not the connection rate
	// admission allows: no rate.
	srv, err := uaserver.Start(ctx, bin, dir, ident, append([]string{
		"limits.maxSessionCount=" + strconv.Itoa(o.concurrency+100),
		"limits.maxChannelCount=" + strconv.Itoa(o.concurrency+100),
		"limits.connectionsPerSecond=0"}, uaserver.ManyClientsOneSource...)...)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	if err := ident.Trust(srv.DER, "uastack-server"); err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(srv.DER)
	if err != nil {
		return nil, err
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("server key is %T, not RSA", cert.PublicKey)
	}

	// The ceiling is timed before and after the connects and averaged, so that a change
	// in the machine's load during the run weighs on both sides alike.
	prog.Stage("timing RSA operations")
	ceil, err := rsaCeiling(pub.Size()*8, o.rsaOps)
	if err != nil {
		return nil, err
	}

	// One endpoint cache for all clients: a connect is the channel and the session, not
	// discovery.
	cache := client.NewEndpointCache()
	for _, m := range modes {
		prog.Stage("connect " + m.name)
		opts := []client.Option{client.Security(m.policy, m.mode), client.Certificate(ident.DER, ident.Key),
			client.Application(ident.URI, "uastack bench"), client.TrustStore(ident.PKI), client.WithEndpointCache(cache)}
		dial := func(context.Context) (drive.Call, func(), error) {
			return func(ctx context.Context) error {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				c, err := client.Dial(cctx, srv.URL, opts...)
				if err != nil {
					return err
				}
				return c.Close(cctx)
			}, func() {}, nil
		}
		res, err := drive.Run(ctx, dial, drive.Options{Clients: o.concurrency, Outstanding: 1, Warmup: o.warmup,
			Window: o.duration, ServerPid: srv.Pid(), Progress: prog})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		p := report.Percentiles(res.Latencies, 0.5)
		vals := []report.Value{
			{Name: colRate, Value: res.PerSecond(), Unit: "1/s"},
			{Name: colServerCPU, Value: res.ServerMicros(), Unit: "µs"},
			{Name: colClientCPU, Value: res.ClientMicros(), Unit: "µs"},
			{Name: colAllocs, Value: res.AllocsPer()},
			{Name: colBytes, Value: res.BytesPer() / 1024, Unit: "KiB"},
			{Name: colP50, Value: float64(p[0]) / float64(time.Millisecond), Unit: "ms"},
		}
		r.Add(report.Row{Name: m.name, Values: vals})
	}
	prog.Stage("timing RSA operations")
	after, err := rsaCeiling(pub.Size()*8, o.rsaOps)
	if err != nil {
		return nil, err
	}
	ceil = ceil.mean(after)
	for _, op := range ceil.ops {
		r.Add(report.Row{Name: op.name, Values: []report.Value{{Name: "µs/op", Value: op.micros, Unit: "µs"}}})
	}
	for i, m := range modes {
		raw := ceil.perConnect[m.policy]
		if raw == 0 {
			continue
		}
		row := &r.Rows[i]
		cpu, _ := row.Get(colServerCPU)
		row.Values = append(row.Values, report.Value{Name: colRaw, Value: raw, Unit: "µs"},
			report.Value{Name: colRatio, Value: cpu / raw})
	}
	if row, ok := r.Row("Basic256Sha256 SignAndEncrypt"); ok {
		x, _ := row.Get(colRatio)
		verdict := "met"
		if x > 1.3 {
			verdict = "**missed**"
		}
		r.Note("Basic256Sha256 SignAndEncrypt: server CPU per connect / raw RSA cost = **%.2f** (bar ≤ 1.3: %s).", x, verdict)
	}
	r.Note("RSA ceiling per secured connect, server side, RSA-%d: %s.", pub.Size()*8, ceil.formula)
	r.Note("Server CPU is the server process's utime+stime (/proc, 10 ms ticks) over the window. Client allocations are this process's (runtime.MemStats); the server has no endpoint exposing its own, so server allocations are not measured.")
	r.Note("Each connect reuses the cached endpoints (no GetEndpoints); %d connects in flight.", o.concurrency)
	return r, nil
}

// mean averages two timings of the same operations.
func (c ceiling) mean(o ceiling) ceiling {
	out := ceiling{perConnect: map[string]float64{}, formula: c.formula}
	for i, op := range c.ops {
		out.ops = append(out.ops, timedOp{op.name, (op.micros + o.ops[i].micros) / 2})
	}
	for k, v := range c.perConnect {
		out.perConnect[k] = (v + o.perConnect[k]) / 2
	}
	return out
}

// timedOp is one RSA operation's measured cost.
type timedOp struct {
	name   string
	micros float64
}

// ceiling is the raw RSA cost of a secured connect on the server side, per policy.
type ceiling struct {
	ops        []timedOp
	perConnect map[string]float64 // policy URI → µs
	formula    string
}

// rsaCeiling times the RSA operations the server performs per secured connect with a
// key of bits, n times each (CPU time of this process), and adds them up per policy. The server:
//   - decrypts the OpenSecureChannel request: its sequence header and body (about 93 B),
//     padding and the client's signature, in OAEP blocks (k − 42 B for SHA-1, k − 66 B
//     for SHA-256), that is dec blocks;
//   - verifies the request's signature (1 public op);
//   - signs the response and encrypts it in enc blocks (about 96 B of body);
//   - verifies the client certificate's signature (1 public op: the bench certificate is
//     self-signed);
//   - signs clientCertificate+clientNonce in CreateSession (1 private op);
//   - verifies the client's signature in ActivateSession (1 public op).
//
// Sign mode costs the same: OpenSecureChannel is encrypted in both modes (Part 6 §6.7.4).
func rsaCeiling(bits, n int) (ceiling, error) {
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return ceiling{}, err
	}
	k := bits / 8
	blocks := func(plain, overhead int) int {
		b := k - overhead
		return (plain + 1 + k + b - 1) / b // body, one padding-size byte, signature
	}
	msg := make([]byte, 64)
	digest := sha256.Sum256(msg)
	// CPU time, not wall time: the server's side is charged in CPU time too, and a shared
	// machine stretches wall time.
	time1 := func(f func() error) (float64, error) {
		start := proc.SelfCPU()
		for range n {
			if err := f(); err != nil {
				return 0, err
			}
		}
		return float64((proc.SelfCPU() - start).Microseconds()) / float64(n), nil
	}
	out := ceiling{perConnect: map[string]float64{}}
	for _, p := range []struct {
		uri      string
		name     string
		hash     func() hash.Hash
		overhead int
		pss      bool
	}{
		{policy.URIBasic256Sha256, "Basic256Sha256", sha1.New, 2*sha1.Size + 2, false},
		{policy.URIAes256Sha256RsaPss, "Aes256Sha256RsaPss", sha256.New, 2*sha256.Size + 2, true},
	} {
		ct, err := rsa.EncryptOAEP(p.hash(), rand.Reader, &key.PublicKey, msg, nil)
		if err != nil {
			return out, err
		}
		var sig []byte
		sign := func() error {
			var err error
			if p.pss {
				sig, err = rsa.SignPSS(rand.Reader, key, crypto.SHA256, digest[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
			} else {
				sig, err = rsa.SignPKCS1v15(nil, key, crypto.SHA256, digest[:])
			}
			return err
		}
		verify := func() error {
			if p.pss {
				return rsa.VerifyPSS(&key.PublicKey, crypto.SHA256, digest[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
			}
			return rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, digest[:], sig)
		}
		dec, err := time1(func() error { _, err := rsa.DecryptOAEP(p.hash(), nil, key, ct, nil); return err })
		if err != nil {
			return out, err
		}
		enc, err := time1(func() error { _, err := rsa.EncryptOAEP(p.hash(), rand.Reader, &key.PublicKey, msg, nil); return err })
		if err != nil {
			return out, err
		}
		sgn, err := time1(sign)
		if err != nil {
			return out, err
		}
		ver, err := time1(verify)
		if err != nil {
			return out, err
		}
		bits := strconv.Itoa(bits)
		sigName := "PKCS#1 v1.5"
		if p.pss {
			sigName = "PSS"
		}
		out.ops = append(out.ops,
			timedOp{fmt.Sprintf("RSA-%s OAEP decrypt (%s)", bits, p.name), dec},
			timedOp{fmt.Sprintf("RSA-%s OAEP encrypt (%s)", bits, p.name), enc},
			timedOp{fmt.Sprintf("RSA-%s %s sign (%s)", bits, sigName, p.name), sgn},
			timedOp{fmt.Sprintf("RSA-%s %s verify (%s)", bits, sigName, p.name), ver})
		nDec, nEnc := blocks(93, p.overhead), blocks(96, p.overhead)
		out.perConnect[p.uri] = float64(nDec)*dec + float64(nEnc)*enc + 2*sgn + 3*ver
		out.formula = fmt.Sprintf("%d OAEP decrypts + %d OAEP encrypts + 2 signs + 3 verifies (see rsaCeiling in bench/cmd/connect)", nDec, nEnc)
	}
	return out, nil
}
