package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"uastack.dev/bench/internal/uaserver"
	"uastack.dev/services/mirror/natsnode"
)

// clusterName names the redundant set (mirror.cluster) and its NATS cluster.
const clusterName = "failover"

// redundantSet is the NATS nodes in this process and the uastack servers around them.
type redundantSet struct {
	nats    []*natsnode.Node
	servers []*uaserver.Server
	urls    []string // the servers' endpoint URLs, by index
}

// serverURI is the ApplicationUri of server i.
func serverURI(i int) string { return "urn:127.0.0.1:uastack:failover:" + strconv.Itoa(i) }

// startSet starts o.nats NATS nodes (a cluster when more than one) and o.servers
// servers mirroring through them, each with its own PKI under dir trusting the bench's
// client applications ids, and makes each of them trust every server. On an error
// nothing is left running.
func startSet(ctx context.Context, o options, bin, dir string, ids []*uaserver.Identity) (set *redundantSet, err error) {
	set = &redundantSet{}
	defer func() {
		if err != nil {
			set.stop()
			set = nil
		}
	}()
	natsDir := filepath.Join(dir, "nats")
	if o.nats == 1 {
		node, err := natsnode.Start(natsnode.Config{DataDir: natsDir})
		if err != nil {
			return set, err
		}
		set.nats = []*natsnode.Node{node}
	} else if set.nats, err = natsnode.StartCluster(natsDir, o.nats, clusterName); err != nil {
		return set, err
	}
	var natsURLs []string
	for _, n := range set.nats {
		natsURLs = append(natsURLs, n.ClientURL())
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return set, err
	}
	// Every session may end on one server (two of three killed, say), with its
	// probes on top: size each server for all of them.
	room := strconv.Itoa(o.sessions + 64)
	sets := append([]string{
		"mirror.urls=" + strings.Join(natsURLs, ","),
		"mirror.cluster=" + clusterName,
		"mirror.key=" + base64.StdEncoding.EncodeToString(key),
		"mirror.replicas=" + strconv.Itoa(o.nats),
		"limits.maxSessionCount=" + room,
		"limits.maxSubscriptionCount=" + room,
		"limits.maxChannelCount=" + strconv.Itoa(2*o.sessions+64),
		"limits.maxQueuedRequestCount=" + strconv.Itoa(max(200, 2*o.sessions)),
	}, uaserver.ManyClientsOneSource...)
	for i := range o.servers {
		srv, err := uaserver.StartTrusting(ctx, bin, filepath.Join(dir, "server-"+strconv.Itoa(i)), ids,
			append([]string{"application.applicationUri=" + serverURI(i)}, sets...)...)
		if err != nil {
			return set, fmt.Errorf("server %d: %w", i, err)
		}
		set.servers = append(set.servers, srv)
		set.urls = append(set.urls, srv.URL)
		for _, id := range ids {
			if err := id.Trust(srv.DER, "server-"+strconv.Itoa(i)); err != nil {
				return set, err
			}
		}
	}
	return set, nil
}

// index returns the index of the server at url, or -1.
func (s *redundantSet) index(url string) int {
	for i, u := range s.urls {
		if u == url {
			return i
		}
	}
	return -1
}

// stop stops the servers still running, then the NATS nodes.
func (s *redundantSet) stop() {
	for _, srv := range s.servers {
		srv.Stop()
	}
	for _, n := range s.nats {
		n.Shutdown()
	}
}
