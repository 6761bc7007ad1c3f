package natsnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// clusterReadyTimeout bounds StartCluster's wait for JetStream's meta leader: the first
// election waits out a randomised 4 to 9 s timeout of NATS's raft.
const clusterReadyTimeout = time.Minute

// clusterAttempts is how often StartCluster picks fresh ports when one of the reserved
// route ports was taken by another process before its node bound it.
const clusterAttempts = 3

// errPortTaken says that a route port reserved for a node was bound by someone else in
// the moment between its reservation and the node's start.
var errPortTaken = errors.New("a reserved route port was taken")

// released, when not nil, is called with each reserved port as its reservation is
// released: a test takes the port there to lose the race on purpose.
var released func(port int)

// StartCluster starts n nodes (n ≥ 2) on 127.0.0.1 as the cluster name, node i named
// name-i with its store in dir/node-i, and returns once JetStream is ready on all of
// them (WaitJetStream). Every node's routes name every node, itself included, so that
// JetStream's first quorum is counted over all n and any node can be restarted with its
// Config. On an error no node is left running.
//
// The route ports must be known before the first node starts, which port 0 cannot give:
// they are reserved by listening on 127.0.0.1:0 (the kernel hands out distinct free
// ports), and each reservation is released just before its node binds the port. Should
// another process take a port in that moment, the nodes are stopped, their stores
// removed and the cluster started again on fresh ports. Client ports are port 0.
func StartCluster(dir string, n int, name string) ([]*Node, error) {
	if n < 2 {
		return nil, fmt.Errorf("natsnode: a cluster of %d nodes; Start runs one", n)
	}
	for attempt := 1; ; attempt++ {
		nodes, err := startCluster(dir, n, name)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == clusterAttempts {
			return nodes, err
		}
		for i := range n {
			if err := os.RemoveAll(nodeDir(dir, i)); err != nil {
				return nil, fmt.Errorf("natsnode: %w", err)
			}
		}
	}
}

func nodeDir(dir string, i int) string {
	return filepath.Join(dir, "node-"+strconv.Itoa(i))
}

func startCluster(dir string, n int, name string) (nodes []*Node, err error) {
	reserved := make([]net.Listener, 0, n)
	defer func() {
		for _, ln := range reserved {
			_ = ln.Close() // those not yet handed to a node
		}
		if err != nil {
			for _, node := range nodes {
				node.Shutdown()
			}
			nodes = nil
		}
	}()
	var routes []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("natsnode: reserving a route port: %w", err)
		}
		reserved = append(reserved, ln)
		routes = append(routes, "nats-route://"+ln.Addr().String())
	}
	for i := range n {
		port := reserved[0].Addr().(*net.TCPAddr).Port
		_ = reserved[0].Close()
		reserved = reserved[1:]
		if released != nil {
			released(port)
		}
		node, err := Start(Config{
			Name:    name + "-" + strconv.Itoa(i),
			DataDir: nodeDir(dir, i),
			Cluster: Cluster{Name: name, Port: port, Routes: routes},
		})
		if err != nil {
			if portTaken(port) {
				return nodes, fmt.Errorf("natsnode: node %d: %w: %w", i, errPortTaken, err)
			}
			return nodes, fmt.Errorf("natsnode: node %d: %w", i, err)
		}
		nodes = append(nodes, node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	for _, node := range nodes {
		if err := node.WaitJetStream(ctx); err != nil {
			return nodes, err
		}
	}
	return nodes, nil
}

// portTaken reports whether another socket now listens on the loopback port.
func portTaken(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return true
	}
	_ = ln.Close()
	return false
}
