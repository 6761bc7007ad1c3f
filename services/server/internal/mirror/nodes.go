package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// nodeKey is the key of server number n in <set>-nodes.
func nodeKey(n uint8) string { return "n" + strconv.Itoa(int(n)) }

// join takes this server's number in the set: the one its ServerUri holds already (a
// restart within the key's TTL), else the lowest free one, each a create that only one
// server can win.
func (m *Mirror) join(ctx context.Context) error {
	uris, err := m.members(ctx)
	if err != nil {
		return err
	}
	for n, uri := range uris {
		if uri == m.cfg.ServerURI {
			entry, err := m.nodes.Get(ctx, nodeKey(n))
			if err != nil {
				break
			}
			rev, err := m.putNode(ctx, n, entry.Revision())
			if err == nil {
				m.node, m.nodeRev = n, rev
				return nil
			}
		}
	}
	for n := 1; n <= 255; n++ {
		if _, taken := uris[uint8(n)]; taken {
			continue
		}
		key := nodeKey(uint8(n))
		rev, err := m.nodes.Create(ctx, key, m.seal.seal(key, []byte(m.cfg.ServerURI)), jetstream.KeyTTL(nodeTTL))
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			return fmt.Errorf("mirror: joining the set: %w", err)
		}
		m.node, m.nodeRev = uint8(n), rev
		return nil
	}
	return errors.New("mirror: the set has 255 servers already")
}

// putNode writes this server's ServerUri under number n, a compare-and-swap on rev, with
// the key's TTL (a KV Update would drop it).
func (m *Mirror) putNode(ctx context.Context, n uint8, rev uint64) (uint64, error) {
	key := nodeKey(n)
	msg := &nats.Msg{Subject: "$KV." + m.cfg.Cluster + "-nodes." + key, Data: m.seal.seal(key, []byte(m.cfg.ServerURI))}
	ack, err := m.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(nodeTTL))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// members returns the ServerUris of the set's servers by number.
func (m *Mirror) members(ctx context.Context) (map[uint8]string, error) {
	out := make(map[uint8]string)
	keys, err := m.nodes.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("mirror: listing the set: %w", err)
	}
	for key := range keys.Keys() {
		n, err := strconv.Atoi(strings.TrimPrefix(key, "n"))
		if err != nil || n < 1 || n > 255 {
			continue
		}
		entry, err := m.nodes.Get(ctx, key)
		if err != nil {
			continue
		}
		uri, err := m.open("server record", key, entry.Value())
		if err != nil {
			continue
		}
		out[uint8(n)] = string(uri)
	}
	return out, nil
}

// keepAlive renews this server's key in the set, the records of its sessions, and tells
// Members of the set's servers when they change.
func (m *Mirror) keepAlive() {
	t := time.NewTicker(nodeInterval)
	defer t.Stop()
	// A server that joins or leaves is told at once; the ticker catches what a watch
	// cut by a NATS outage missed.
	var joins <-chan jetstream.KeyValueEntry
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if w, err := m.nodes.WatchAll(ctx, jetstream.UpdatesOnly()); err == nil {
		defer func() { _ = w.Stop() }()
		joins = w.Updates()
	}
	var last []string
	for {
		m.tellMembers(&last)
		select {
		case <-m.done:
			return
		case _, ok := <-joins:
			if !ok {
				joins = nil
			}
		case now := <-t.C:
			m.touch(now)
			m.renewSnapshots(now)
			m.renew()
		}
	}
}

// renew writes this server's key again, a compare-and-swap: a server that finds its
// number taken (it was away past the TTL) keeps it for its subscription IDs, and says so.
func (m *Mirror) renew() {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Timeout)
	defer cancel()
	rev, err := m.putNode(ctx, m.node, m.nodeRev)
	if err != nil {
		// Expired while NATS was away: create it again.
		rev, err = m.putNode(ctx, m.node, 0)
	}
	if err != nil {
		m.log.Warn("mirror: renewing this server's place in the set", "node", m.node, "err", err)
		return
	}
	m.nodeRev = rev
}

// tellMembers calls Members when the set's ServerUris changed since last.
func (m *Mirror) tellMembers(last *[]string) {
	if m.cfg.Members == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Timeout)
	defer cancel()
	byNode, err := m.members(ctx)
	if err != nil {
		return
	}
	uris := make([]string, 0, len(byNode))
	for _, u := range byNode {
		uris = append(uris, u)
	}
	slices.Sort(uris)
	uris = slices.Compact(uris)
	if !slices.Equal(uris, *last) {
		*last = uris
		m.cfg.Members(uris)
	}
}
