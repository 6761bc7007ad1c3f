package driver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Options configure a Device: where it is and which of its registers and coils become
// variables. ParseOptions reads them from JSON; NewDevice checks them and fills the zero
// durations with their defaults, so that Options built in Go follow the same rules.
type Options struct {
	// Address is the device's TCP address, "host:port" ("127.0.0.1:502"). Required.
	Address string
	// UnitID is the Modbus unit identifier sent with every request. ParseOptions sets 1
	// when the field is left out; in Go, 0 is unit 0.
	UnitID uint8
	// Timeout bounds each request, from sending it to its answer, and the connection's
	// set-up; 1s unless set.
	Timeout time.Duration
	// MinPollInterval is the fastest a Poller polls, whatever sampling interval is asked
	// for; 100ms unless set.
	MinPollInterval time.Duration
	// WordOrder is the order of the two registers of a 32-bit value; HighFirst unless set.
	// Within a register the bytes are always big-endian, as the Modbus data model has
	// them.
	WordOrder WordOrder
	// Points are the variables: a register, a pair of registers or a bit each. Their
	// index in this slice is how ReadPoints, WritePoint and the Poller name them.
	Points []Point
}

// Point is one value of the device.
type Point struct {
	// Name names the point; unique within Options.
	Name string
	// Table is the Modbus table the point is in.
	Table Table
	// Address is the point's first register or bit, 0-based as on the wire.
	Address uint16
	// Type is how the registers read; Bool for coils and discrete inputs, and only for
	// them.
	Type Type
	// Writable allows WritePoint; only holding registers and coils can be written.
	Writable bool
}

// Width returns how many registers (or bits) the point takes.
func (p Point) Width() uint16 { return p.Type.width() }

// Table is one of the four tables of the Modbus data model (Modbus Application Protocol
// v1.1b3 §4.3).
type Table uint8

// The tables. The zero Table is invalid.
const (
	Holding  Table = iota + 1 // holding registers: 16-bit, read-write
	Coil                      // coils: 1-bit, read-write
	Input                     // input registers: 16-bit, read-only
	Discrete                  // discrete inputs: 1-bit, read-only
)

var tableNames = [...]string{Holding: "holding", Coil: "coil", Input: "input", Discrete: "discrete"}

// String returns the table's name as the options spell it.
func (t Table) String() string {
	if t >= Holding && t <= Discrete {
		return tableNames[t]
	}
	return "Table(" + strconv.Itoa(int(t)) + ")"
}

// bits says whether the table holds bits rather than registers.
func (t Table) bits() bool { return t == Coil || t == Discrete }

// maxPerRequest is the most a read request may ask for (Modbus Application Protocol
// v1.1b3 §6.1 to §6.4): 2000 bits or 125 registers.
func (t Table) maxPerRequest() int {
	if t.bits() {
		return 2000
	}
	return 125
}

// Type is how a point's registers read. Its Go value (in Value.Value, and the one
// WritePoint prefers) is the type of the same name: uint16, int16, uint32, int32, float32
// or bool.
type Type uint8

// The types. The zero Type is invalid.
const (
	Uint16 Type = iota + 1
	Int16
	Uint32
	Int32
	Float32
	Bool
)

var typeNames = [...]string{Uint16: "uint16", Int16: "int16", Uint32: "uint32", Int32: "int32", Float32: "float32", Bool: "bool"}

// String returns the type's name as the options spell it.
func (t Type) String() string {
	if t >= Uint16 && t <= Bool {
		return typeNames[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

func (t Type) width() uint16 {
	switch t {
	case Uint32, Int32, Float32:
		return 2
	}
	return 1
}

// WordOrder is the order of the two registers of a 32-bit value.
type WordOrder uint8

// The word orders. HighFirst, the zero value, is the Modbus convention of big-endian
// throughout; LowFirst is common among PLCs that store 32-bit values as two native
// words.
const (
	HighFirst WordOrder = iota // "high-first": the register at Address holds the high 16 bits
	LowFirst                   // "low-first": the register at Address holds the low 16 bits
)

// String returns the word order's name as the options spell it.
func (w WordOrder) String() string {
	switch w {
	case HighFirst:
		return "high-first"
	case LowFirst:
		return "low-first"
	}
	return "WordOrder(" + strconv.Itoa(int(w)) + ")"
}

// The defaults of Options.
const (
	DefaultUnitID          = 1
	DefaultTimeout         = time.Second
	DefaultMinPollInterval = 100 * time.Millisecond
)

// jsonOptions is the JSON form of Options. Pointers tell a field left out from one set
// to its zero value.
type jsonOptions struct {
	Address         string      `json:"address"`
	UnitID          *int        `json:"unitId"`
	Timeout         *string     `json:"timeout"`
	MinPollInterval *string     `json:"minPollInterval"`
	WordOrder       *string     `json:"wordOrder"`
	Points          []jsonPoint `json:"points"`
}

type jsonPoint struct {
	Name     string `json:"name"`
	Table    string `json:"table"`
	Address  *int   `json:"address"`
	Type     string `json:"type"`
	Writable bool   `json:"writable"`
}

// ParseOptions reads Options from JSON such as
//
//	{"address": "127.0.0.1:502", "unitId": 1, "timeout": "1s", "minPollInterval": "100ms",
//	 "wordOrder": "high-first",
//	 "points": [{"name": "Temperature", "table": "input", "address": 0, "type": "int16"},
//	            {"name": "Setpoint", "table": "holding", "address": 10, "type": "float32", "writable": true},
//	            {"name": "Pump", "table": "coil", "address": 0, "writable": true}]}
//
// Durations are Go duration strings. A point's type defaults to "bool" in the coil and
// discrete tables and to "uint16" in the register tables. Unknown fields, a missing
// address, duplicate names, writable points that share a register or coil, and
// values out of range are errors that name the field or the point.
func ParseOptions(b []byte) (Options, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j jsonOptions
	if err := dec.Decode(&j); err != nil {
		return Options{}, fmt.Errorf("modbus options: %w", err)
	}
	if dec.More() {
		return Options{}, errors.New("modbus options: data after the JSON object")
	}
	o := Options{Address: j.Address}
	if j.UnitID != nil {
		if *j.UnitID < 0 || *j.UnitID > 255 {
			return Options{}, fmt.Errorf("modbus options: unitId %d is not in 0..255", *j.UnitID)
		}
		o.UnitID = uint8(*j.UnitID)
	} else {
		o.UnitID = DefaultUnitID
	}
	var err error
	if o.Timeout, err = parseDuration("timeout", j.Timeout, DefaultTimeout); err != nil {
		return Options{}, err
	}
	if o.MinPollInterval, err = parseDuration("minPollInterval", j.MinPollInterval, DefaultMinPollInterval); err != nil {
		return Options{}, err
	}
	if j.WordOrder != nil {
		switch *j.WordOrder {
		case "high-first":
			o.WordOrder = HighFirst
		case "low-first":
			o.WordOrder = LowFirst
		default:
			return Options{}, fmt.Errorf("modbus options: wordOrder %q is neither \"high-first\" nor \"low-first\"", *j.WordOrder)
		}
	}
	for i, jp := range j.Points {
		p, err := jp.point(i)
		if err != nil {
			return Options{}, err
		}
		o.Points = append(o.Points, p)
	}
	if err := o.check(); err != nil {
		return Options{}, err
	}
	return o, nil
}

func parseDuration(field string, s *string, def time.Duration) (time.Duration, error) {
	if s == nil {
		return def, nil
	}
	d, err := time.ParseDuration(*s)
	if err != nil {
		return 0, fmt.Errorf("modbus options: %s: %w", field, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("modbus options: %s %q is not positive", field, *s)
	}
	return d, nil
}

// point converts the i-th point of the JSON form.
func (jp jsonPoint) point(i int) (Point, error) {
	name := jp.Name
	if name == "" {
		name = "#" + strconv.Itoa(i)
	}
	bad := func(format string, args ...any) (Point, error) {
		return Point{}, fmt.Errorf("modbus options: point %q: %s", name, fmt.Sprintf(format, args...))
	}
	p := Point{Name: jp.Name, Writable: jp.Writable}
	switch jp.Table {
	case "holding":
		p.Table = Holding
	case "coil":
		p.Table = Coil
	case "input":
		p.Table = Input
	case "discrete":
		p.Table = Discrete
	case "":
		return bad("no table")
	default:
		return bad("table %q is not one of holding, coil, input, discrete", jp.Table)
	}
	switch jp.Type {
	case "uint16":
		p.Type = Uint16
	case "int16":
		p.Type = Int16
	case "uint32":
		p.Type = Uint32
	case "int32":
		p.Type = Int32
	case "float32":
		p.Type = Float32
	case "bool":
		p.Type = Bool
	case "":
		p.Type = Uint16
		if p.Table.bits() {
			p.Type = Bool
		}
	default:
		return bad("type %q is not one of uint16, int16, uint32, int32, float32, bool", jp.Type)
	}
	if jp.Address == nil {
		return bad("no address")
	}
	if *jp.Address < 0 || *jp.Address > 0xffff {
		return bad("address %d is not in 0..65535", *jp.Address)
	}
	p.Address = uint16(*jp.Address)
	return p, nil
}

// check applies the rules ParseOptions documents to o, whether it came from JSON or
// from Go.
func (o *Options) check() error {
	if o.Address == "" {
		return errors.New("modbus options: no address")
	}
	if _, _, err := net.SplitHostPort(o.Address); err != nil {
		return fmt.Errorf("modbus options: address %q: %w", o.Address, err)
	}
	if o.Timeout < 0 || o.MinPollInterval < 0 {
		return errors.New("modbus options: a negative duration")
	}
	if o.WordOrder != HighFirst && o.WordOrder != LowFirst {
		return fmt.Errorf("modbus options: word order %v", o.WordOrder)
	}
	if len(o.Points) == 0 {
		return errors.New("modbus options: no points")
	}
	names := make(map[string]int, len(o.Points))
	// Writable points by (table, address) of each register or bit they take: a write
	// to one must not change another behind the manager's back.
	written := make(map[[2]int]int)
	for i, p := range o.Points {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("modbus options: point %q: %s", p.Name, fmt.Sprintf(format, args...))
		}
		if p.Name == "" {
			return fmt.Errorf("modbus options: point %d has no name", i)
		}
		if j, dup := names[p.Name]; dup {
			return bad("the name is also point %d's", j)
		}
		names[p.Name] = i
		if p.Table < Holding || p.Table > Discrete {
			return bad("table %v", p.Table)
		}
		if p.Type < Uint16 || p.Type > Bool {
			return bad("type %v", p.Type)
		}
		if p.Table.bits() != (p.Type == Bool) {
			return bad("type %v does not fit the %v table", p.Type, p.Table)
		}
		if int(p.Address)+int(p.Width()) > 0x10000 {
			return bad("%v at address %d runs past 65535", p.Type, p.Address)
		}
		if !p.Writable {
			continue
		}
		if p.Table != Holding && p.Table != Coil {
			return bad("the %v table is read-only", p.Table)
		}
		for a := int(p.Address); a < int(p.Address)+int(p.Width()); a++ {
			k := [2]int{int(p.Table), a}
			if j, taken := written[k]; taken {
				return bad("writable, and %v %d is also written by point %q", p.Table, a, o.Points[j].Name)
			}
			written[k] = i
		}
	}
	return nil
}

// withDefaults returns o with the defaults in the fields left zero, as NewDevice uses
// it.
func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MinPollInterval == 0 {
		o.MinPollInterval = DefaultMinPollInterval
	}
	return o
}
