package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"uastack.dev/pkg/client"
	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/ua"
	"uastack.dev/pkg/ua/attr"
)

func init() {
	register("subscribe", &command{
		synopsis: "<node>...",
		summary:  "print data changes of nodes live, until interrupted (--json: one JSON object per line)",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			o := &subscribeOptions{}
			fs.DurationVar(&o.interval, "interval", time.Second, "publishing interval")
			fs.DurationVar(&o.sampling, "sampling", 0, "sampling interval (default: the publishing interval)")
			fs.StringVar(&o.attr, "attr", "Value", "attribute name or number")
			fs.StringVar(&o.trigger, "trigger", "", "data change trigger: Status, StatusValue (the server's default) or StatusValueTimestamp")
			fs.StringVar(&o.deadband, "deadband", "", `deadband, "abs:<value>" or "pct:<percent of EURange>"`)
			fs.UintVar(&o.queue, "queue", 1, "queue size per item")
			fs.IntVar(&o.count, "count", 0, "stop after this many data changes (0: until interrupted)")
			fs.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until interrupted)")
			return o.run
		},
	})
}

type subscribeOptions struct {
	interval, sampling time.Duration
	attr               string
	trigger, deadband  string
	queue              uint
	count              int
	duration           time.Duration
}

// changeJSON is one data change in --json output, one object per line; Value is the
// DataValue in the OPC UA JSON encoding.
type changeJSON struct {
	NodeID   string          `json:"nodeId"`
	Sequence uint32          `json:"sequence"`
	Status   string          `json:"status"`
	Value    json.RawMessage `json:"value"`
}

// filter builds the DataChangeFilter of --trigger and --deadband, or nil.
func (o *subscribeOptions) filter() (*ua.DataChangeFilter, error) {
	if o.trigger == "" && o.deadband == "" {
		return nil, nil
	}
	f := &ua.DataChangeFilter{Trigger: ua.DataChangeTriggerStatusValue}
	switch strings.ToLower(o.trigger) {
	case "", "statusvalue":
	case "status":
		f.Trigger = ua.DataChangeTriggerStatus
	case "statusvaluetimestamp":
		f.Trigger = ua.DataChangeTriggerStatusValueTimestamp
	default:
		return nil, usagef("unknown --trigger %q (Status, StatusValue or StatusValueTimestamp)", o.trigger)
	}
	if o.deadband != "" {
		kind, val, ok := strings.Cut(o.deadband, ":")
		v, err := strconv.ParseFloat(val, 64)
		if !ok || err != nil || v < 0 {
			return nil, usagef(`--deadband %q: want "abs:<value>" or "pct:<percent>"`, o.deadband)
		}
		switch strings.ToLower(kind) {
		case "abs":
			f.DeadbandType = uint32(ua.DeadbandTypeAbsolute)
		case "pct":
			f.DeadbandType = uint32(ua.DeadbandTypePercent)
		default:
			return nil, usagef(`--deadband %q: want "abs:<value>" or "pct:<percent>"`, o.deadband)
		}
		f.DeadbandValue = v
	}
	return f, nil
}

func (o *subscribeOptions) run(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("subscribe needs at least one node")
	}
	if o.interval <= 0 {
		return usagef("--interval must be positive")
	}
	a, err := parseAttribute(o.attr)
	if err != nil {
		return err
	}
	f, err := o.filter()
	if err != nil {
		return err
	}
	c, err := e.dial(ctx)
	if err != nil {
		return err
	}
	items := make([]client.MonitorItem, len(args))
	for i, s := range args {
		n, err := e.parseNode(ctx, s)
		if err != nil {
			return err
		}
		items[i] = client.MonitorItem{Node: n, Attribute: a, Handle: uint32(i + 1), SamplingInterval: o.sampling,
			QueueSize: uint32(o.queue), Filter: f}
	}
	ch := make(chan *client.Notification, 64)
	rctx, cancel := e.requestContext(ctx)
	defer cancel()
	sub, err := c.Subscribe(rctx, client.SubscriptionParams{Interval: o.interval, C: ch})
	if err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), e.g.timeout)
		defer cancel()
		_ = sub.Delete(dctx)
	}()
	res, err := sub.Monitor(rctx, items...)
	if err != nil {
		return err
	}
	good := 0
	for i, r := range res {
		if r.Status.IsBad() {
			fmt.Fprintf(e.stderr, "uacli: %s: %s: %s\n", items[i].Node, r.Status.Name(), hint(r.Status))
			continue
		}
		good++
	}
	if good == 0 {
		return errReported
	}
	if !e.g.json {
		fmt.Fprintf(e.stderr, "uacli: subscribed to %d of %d nodes every %v (revised); Ctrl-C stops\n",
			good, len(items), sub.Revised().Interval)
	}
	var stop <-chan time.Time
	if o.duration > 0 {
		t := time.NewTimer(o.duration)
		defer t.Stop()
		stop = t.C
	}
	seen := 0
	for {
		select {
		case <-ctx.Done():
			return o.finish(e, sub)
		case <-stop:
			return o.finish(e, sub)
		case n := <-ch:
			if n.Status != 0 {
				fmt.Fprintf(e.stderr, "uacli: subscription status %s\n", n.Status.Name())
			}
			for i := range n.DataChanges {
				dc := &n.DataChanges[i]
				if dc.ClientHandle == 0 || int(dc.ClientHandle) > len(items) {
					continue
				}
				if err := e.printChange(items[dc.ClientHandle-1].Node, attr.ID(a), n.SequenceNumber, &dc.Value); err != nil {
					return err
				}
				seen++
				if o.count > 0 && seen >= o.count {
					return o.finish(e, sub)
				}
			}
		}
	}
}

// printChange writes one data change: a line of text, or one JSON object per line.
func (e *env) printChange(node codec.NodeId, a attr.ID, seq uint32, dv *codec.DataValue) error {
	if e.g.json {
		raw, err := dataValueJSON(dv)
		if err != nil {
			return err
		}
		b, err := json.Marshal(changeJSON{NodeID: node.String(), Sequence: seq, Status: dv.Status.Name(), Value: raw})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	ts := dv.SourceTimestamp
	if ts == 0 {
		ts = dv.ServerTimestamp
	}
	name := node.String()
	if a != attr.Value {
		name += " " + a.String()
	}
	_, err := fmt.Fprintf(e.stdout, "%s  %s  %s  %s  %s\n", formatTime(ts), name, formatVariant(&dv.Value), typeName(&dv.Value), dv.Status.Name())
	return err
}

// finish reports messages the client could not deliver or recover, if any.
func (o *subscribeOptions) finish(e *env, sub *client.Subscription) error {
	st := sub.Stats()
	if st.Dropped > 0 || st.Lost > 0 {
		fmt.Fprintf(e.stderr, "uacli: %d notification messages dropped (output too slow), %d lost by the server\n", st.Dropped, st.Lost)
	}
	return nil
}
