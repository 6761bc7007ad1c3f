package mirror

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/status"
)

// Values are the server's side of the mirrored namespaces (mirror.namespaces): the
// values a client writes into them on one server of the set are written on every other.
// A node is named by its namespace's URI in the set, since servers may number their
// namespaces differently.
type Values struct {
	// URI is the namespace URI of a namespace index of this server, "" when the
	// namespace is not mirrored; Index is the reverse, false when this server has no
	// such mirrored namespace.
	URI   func(ns uint16) string
	Index func(uri string) (uint16, bool)
	// Apply sets the value another server wrote (or one written before this server
	// started) on this server's node.
	Apply func(node codec.NodeId, dv codec.DataValue)
}

// valueVersion is the first byte of an encoded value record.
const valueVersion = 1

// valueKey is the key of a node's value in <set>-values: a hash of its namespace URI and
// its identifier.
func valueKey(uri string, node codec.NodeId) string {
	e := codec.NewEncoder(make([]byte, 0, 64))
	e.String(uri)
	e.NodeId(node.InNamespace(0))
	return hashHex(e.Bytes())
}

// encodeValue encodes a value record: the server that wrote it, the namespace URI, the
// node (in namespace 0 as a placeholder) and the DataValue.
func encodeValue(origin uint8, uri string, node codec.NodeId, dv *codec.DataValue) []byte {
	e := codec.NewEncoder(make([]byte, 0, 128))
	e.Byte(valueVersion)
	e.Byte(origin)
	e.String(uri)
	e.NodeId(node.InNamespace(0))
	e.DataValue(dv)
	return e.Bytes()
}

func decodeValue(b []byte) (origin uint8, uri string, node codec.NodeId, dv codec.DataValue, err error) {
	d := codec.NewDecoder(b)
	if v := d.Byte(); d.Err() == nil && v != valueVersion {
		return 0, "", node, dv, fmt.Errorf("mirror: value record version %d: %w", v, status.BadDecodingError)
	}
	origin = d.Byte()
	uri = d.String()
	node = d.NodeId()
	d.DataValue(&dv)
	if d.Err() == nil && d.Remaining() != 0 {
		d.Fail(status.BadDecodingError)
	}
	return origin, uri, node, dv, d.Err()
}

// ValueWritten queues the value a client wrote to node, in a mirrored namespace, for the
// other servers of the set. The caller answers the Write after Sync.
func (m *Mirror) ValueWritten(node codec.NodeId, dv codec.DataValue) {
	v := m.cfg.Values
	if v == nil {
		return
	}
	uri := v.URI(node.Namespace())
	if uri == "" {
		return
	}
	key := valueKey(uri, node)
	m.w.put(op{subject: "$KV." + m.cfg.Cluster + "-values." + key, plain: encodeValue(m.node, uri, node, &dv), seal: key})
}

// watchValues follows <set>-values: the values written before this server started, then
// every value another server writes, applied to this server's nodes.
func (m *Mirror) watchValues() error {
	if m.cfg.Values == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := m.values.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		cancel()
		return fmt.Errorf("mirror: watching values: %w", err)
	}
	m.stops = append(m.stops, func() { _ = w.Stop(); cancel() })
	m.loops.Go(func() {
		initial := true
		for {
			select {
			case <-m.done:
				return
			case entry, ok := <-w.Updates():
				if !ok {
					return
				}
				if entry == nil { // the values written before are all in
					initial = false
					continue
				}
				m.valueWritten(entry, initial)
			}
		}
	})
	return nil
}

// valueWritten applies one value of <set>-values: another server's, or any while the
// watch delivers what was written before this server started.
func (m *Mirror) valueWritten(entry jetstream.KeyValueEntry, initial bool) {
	plain, err := m.open("value record", entry.Key(), entry.Value())
	if err != nil {
		return
	}
	origin, uri, node, dv, err := decodeValue(plain)
	if err != nil {
		m.log.Warn("mirror: a value record does not decode", "key", entry.Key(), "err", err)
		return
	}
	if origin == m.node && !initial {
		return // this server's own write
	}
	ns, ok := m.cfg.Values.Index(uri)
	if !ok {
		return // a namespace this server does not mirror
	}
	m.cfg.Values.Apply(node.InNamespace(ns), dv)
}
