package driver

import (
	"context"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	"github.com/simonvetter/modbus"
)

// Device is a Modbus TCP device reached through github.com/simonvetter/modbus: it reads
// and writes the points of its Options with blocking I/O, one request at a time.
//
// It connects on the first request rather than in NewDevice, so that a device that is
// down does not keep a plugin from starting, and after a CommError it drops the
// connection and connects again on the next request.
//
// Its methods are safe for concurrent use: requests queue for the one connection. A
// caller's ctx bounds the wait in that queue and is checked between the requests of
// one call; a request on the wire ends within Options.Timeout (the client library
// cannot abandon one), and connecting within the library's dial timeout of 5s.
type Device struct {
	opts Options

	// conn holds the connection: a caller takes its one token to use client and open,
	// and puts it back when done. It is a channel rather than a mutex so that a caller
	// waiting for it can give up when its ctx ends.
	conn   chan struct{}
	client *modbus.ModbusClient // owned by the holder of conn's token
	open   bool                 // owned by the holder of conn's token; client is connected

	mu     sync.Mutex // guards health
	health Health
}

// Health is what a Device last saw of its device, for nodemgr.HealthReporter.
type Health struct {
	// LastOK is when the device last answered a request, with data or with an
	// exception; zero if it never did.
	LastOK time.Time
	// LastErr is the last request's error that was not the caller's (neither a
	// RangeError nor a TypeError nor a cancelled ctx): a *CommError or an
	// *ExceptionError. Nil if none yet; a later success does not clear it.
	LastErr error
	// LastErrAt is when LastErr happened.
	LastErrAt time.Time
	// Failing is true when the last request got no answer (a CommError): the device is
	// unreachable until a request gets through again.
	Failing bool
}

// Value is the value of one point as read, or why it could not be read.
type Value struct {
	// Point is the point's index in Options.Points.
	Point int
	// Value is of the point's Go type (uint16, int16, uint32, int32, float32, bool); nil
	// when Err is set.
	Value any
	// Err is why the point has no value: an *ExceptionError for its request, or, from a
	// Poller, a *CommError.
	Err error
	// Time is when the answer (or the failure) arrived.
	Time time.Time
}

// NewDevice returns a Device for opts, which it checks as ParseOptions does, filling
// zero durations with their defaults. It does not connect.
func NewDevice(opts Options) (*Device, error) {
	opts = opts.withDefaults()
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts.Points = append([]Point(nil), opts.Points...)
	client, err := modbus.NewClient(&modbus.ClientConfiguration{
		URL:     "tcp://" + opts.Address,
		Timeout: opts.Timeout,
		// The library logs every warning to stdout unless told otherwise; the Device
		// returns its errors instead.
		Logger: log.New(io.Discard, "", 0),
	})
	if err != nil {
		return nil, fmt.Errorf("modbus: client for %s: %w", opts.Address, err)
	}
	if err := client.SetUnitId(opts.UnitID); err != nil {
		return nil, fmt.Errorf("modbus: unit id: %w", err)
	}
	d := &Device{opts: opts, conn: make(chan struct{}, 1), client: client}
	d.conn <- struct{}{}
	return d, nil
}

// Options returns the device's options, defaults filled in. The caller must not modify
// the Points.
func (d *Device) Options() Options { return d.opts }

// Health returns what the device last saw. It never waits on I/O.
func (d *Device) Health() Health {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.health
}

// Close drops the connection, waiting for a request in flight to end. Later requests
// connect again.
func (d *Device) Close() error {
	<-d.conn
	defer func() { d.conn <- struct{}{} }()
	if !d.open {
		return nil
	}
	d.open = false
	return d.client.Close()
}

// acquire takes the connection, or returns ctx's error if ctx ends first.
func (d *Device) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-d.conn:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Device) release() { d.conn <- struct{}{} }

// do runs one request on the connection, which the caller holds, connecting first if
// need be. It returns a *CommError or an *ExceptionError, and records the outcome in
// the health.
func (d *Device) do(table Table, addr, count uint16, write bool, req func() error) error {
	var err error
	if !d.open {
		if err = d.client.Open(); err == nil {
			d.open = true
		}
	}
	if err == nil {
		err = req()
	}
	now := time.Now()
	switch {
	case err == nil:
	case exception(err):
		err = &ExceptionError{Table: table, Address: addr, Count: count, Write: write, Err: err}
	default:
		err = &CommError{Err: err}
		// The connection may hold a late answer or half a frame: start afresh.
		if d.open {
			d.open = false
			d.client.Close()
		}
	}
	_, comm := err.(*CommError)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !comm {
		d.health.LastOK = now
	}
	if err != nil {
		d.health.LastErr, d.health.LastErrAt = err, now
	}
	d.health.Failing = comm
	return err
}

// ReadPoints reads the points idx (indexes into Options.Points) and returns their
// values in the order of idx. It reads the points of one table whose registers touch or
// overlap with one request, as many as a request may ask for (125 registers, 2000
// bits).
//
// A request the device answers with an exception sets the Err of its points' values
// and the others are still read. A request without an answer ends the call: ReadPoints
// then returns a *CommError and no values, as it does ctx's error when ctx ends while
// it waits for the connection or between requests. An index out of range is an error
// before any I/O.
func (d *Device) ReadPoints(ctx context.Context, idx []int) ([]Value, error) {
	for _, i := range idx {
		if i < 0 || i >= len(d.opts.Points) {
			return nil, fmt.Errorf("modbus: no point %d", i)
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	reqs := plan(d.opts.Points, idx)
	if err := d.acquire(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	byPoint := make(map[int]Value, len(idx))
	for _, r := range reqs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var (
			regs []uint16
			bits []bool
		)
		err := d.do(r.table, r.start, r.count, false, func() (err error) {
			switch r.table {
			case Holding:
				regs, err = d.client.ReadRegisters(r.start, r.count, modbus.HOLDING_REGISTER)
			case Input:
				regs, err = d.client.ReadRegisters(r.start, r.count, modbus.INPUT_REGISTER)
			case Coil:
				bits, err = d.client.ReadCoils(r.start, r.count)
			case Discrete:
				bits, err = d.client.ReadDiscreteInputs(r.start, r.count)
			}
			return err
		})
		now := time.Now()
		if _, comm := err.(*CommError); comm {
			return nil, err
		}
		for _, i := range r.points {
			v := Value{Point: i, Err: err, Time: now}
			if err == nil {
				p := d.opts.Points[i]
				off := int(p.Address - r.start)
				if r.table.bits() {
					v.Value = bits[off]
				} else {
					v.Value = decode(p, d.opts.WordOrder, regs[off:])
				}
			}
			byPoint[i] = v
		}
	}
	vals := make([]Value, len(idx))
	for k, i := range idx {
		vals[k] = byPoint[i]
	}
	return vals, nil
}

// WritePoint writes v to the point i, converting it to the point's type: any Go integer
// or float to a register type (a whole number to an integer type), a bool to a coil.
// It returns ErrNotWritable (wrapped) for a point that is not Writable, a *RangeError
// for a value the type cannot hold, a *TypeError for a value of the wrong kind, and
// otherwise the errors of ReadPoints. A 16-bit register is written with Write Single
// Register (function 6), a 32-bit value with Write Multiple Registers (16), a coil with
// Write Single Coil (5).
func (d *Device) WritePoint(ctx context.Context, i int, v any) error {
	if i < 0 || i >= len(d.opts.Points) {
		return fmt.Errorf("modbus: no point %d", i)
	}
	p := d.opts.Points[i]
	if !p.Writable {
		return fmt.Errorf("modbus: point %q: %w", p.Name, ErrNotWritable)
	}
	cv, err := convert(p, v)
	if err != nil {
		return err
	}
	if err := d.acquire(ctx); err != nil {
		return err
	}
	defer d.release()
	return d.do(p.Table, p.Address, p.Width(), true, func() error {
		if b, ok := cv.(bool); ok {
			return d.client.WriteCoil(p.Address, b)
		}
		regs := registers(p, cv, d.opts.WordOrder)
		if len(regs) == 1 {
			return d.client.WriteRegister(p.Address, regs[0])
		}
		return d.client.WriteRegisters(p.Address, regs)
	})
}
