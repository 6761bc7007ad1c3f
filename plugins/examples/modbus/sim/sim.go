// Package sim is a Modbus TCP device that lives in memory, for tests and for people who
// want to try the Modbus plugin without a PLC. It serves every unit id and all 65536
// addresses of the four tables through the Modbus TCP server of
// github.com/simonvetter/modbus, counts the requests it receives, and can be told to
// stall, to answer with an exception, to go away and to come back.
package sim

import (
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/simonvetter/modbus"
)

// Function is a kind of request, as the simulator counts them. The single and multiple
// writes of a table count as one Function: the server library hands both to the same
// handler.
type Function uint8

// The functions, named after the Modbus function codes they stand for (Modbus
// Application Protocol v1.1b3 §6).
const (
	ReadCoils             Function = iota // function 1
	ReadDiscreteInputs                    // function 2
	ReadHoldingRegisters                  // function 3
	ReadInputRegisters                    // function 4
	WriteCoils                            // functions 5 and 15
	WriteHoldingRegisters                 // functions 6 and 16
	numFunctions
)

// Simulator is a Modbus TCP device in memory. Its methods are safe for concurrent use.
type Simulator struct {
	srv  *modbus.ModbusServer
	addr string

	mu         sync.Mutex // guards the tables, requests, exceptions, stall, running, closed
	holding    []uint16
	input      []uint16
	coils      []bool
	discrete   []bool
	requests   [numFunctions]int
	exceptions [numFunctions]error
	stall      chan struct{} // non-nil while stalled; closed to release
	running    bool
	closed     bool

	quit     chan struct{}  // closed by Close: releases stalls, ends the temperature
	tempStop chan struct{}  // closed to stop the running temperature, if any
	wg       sync.WaitGroup // the temperature's goroutine
}

// Start starts a simulator listening on addr ("127.0.0.1:0" for a free port; Addr
// tells which). Every register and bit is zero.
//
// The server library cannot say which port it got, so for port 0 Start picks a free
// port first and listens on it, trying again if another process took it in between.
func Start(addr string) (*Simulator, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s := &Simulator{
		holding:  make([]uint16, 0x10000),
		input:    make([]uint16, 0x10000),
		coils:    make([]bool, 0x10000),
		discrete: make([]bool, 0x10000),
		quit:     make(chan struct{}),
	}
	for attempt := 0; ; attempt++ {
		s.addr = addr
		if port == "0" {
			if s.addr, err = freePort(host); err != nil {
				return nil, err
			}
		}
		s.srv, err = modbus.NewServer(&modbus.ServerConfiguration{
			URL:        "tcp://" + s.addr,
			MaxClients: 16,
			// The library logs to stdout unless told otherwise.
			Logger: log.New(io.Discard, "", 0),
		}, handler{s})
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		err = s.srv.Start()
		if err == nil {
			break
		}
		if port != "0" || attempt == 4 || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("sim: listen on %s: %w", s.addr, err)
		}
	}
	s.running = true
	return s, nil
}

// freePort returns host with a port that was free a moment ago.
func freePort(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("sim: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Addr returns the address the simulator listens on, "127.0.0.1:5020" say.
func (s *Simulator) Addr() string { return s.addr }

// Stop stops listening and drops every connection, as a device that is switched off;
// the tables keep their values. Restart brings it back.
func (s *Simulator) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	s.running = false
	return s.srv.Stop()
}

// Restart listens again on the same address after Stop.
func (s *Simulator) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("sim: closed")
	}
	if s.running {
		return nil
	}
	if err := s.srv.Start(); err != nil {
		return fmt.Errorf("sim: listen on %s: %w", s.addr, err)
	}
	s.running = true
	return nil
}

// Close stops the simulator for good: it stops listening, releases stalled requests
// (they answer with a device failure) and stops the temperature.
func (s *Simulator) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.quit)
	var err error
	if s.running {
		s.running = false
		err = s.srv.Stop()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// Requests returns how many requests of function f the simulator has received,
// including those that stalled or failed.
func (s *Simulator) Requests(f Function) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[f]
}

// TotalRequests returns how many requests of any function the simulator has received.
func (s *Simulator) TotalRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.requests {
		n += c
	}
	return n
}

// ResetRequests sets every request count back to zero.
func (s *Simulator) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = [numFunctions]int{}
}

// SetException makes requests of function f fail with err, a Modbus exception such as
// modbus.ErrIllegalDataAddress (other errors answer Server Device Failure); nil makes
// them succeed again.
func (s *Simulator) SetException(f Function, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exceptions[f] = err
}

// Stall makes every request wait, unanswered, until release is called (or the
// simulator is closed): a device that hangs. Calling release more than once is
// harmless.
func (s *Simulator) Stall() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stall == nil {
		s.stall = make(chan struct{})
	}
	ch := s.stall
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.stall == ch {
				s.stall = nil
			}
			close(ch)
		})
	}
}

// SetHolding sets holding registers from addr on; values past 65535 are dropped.
func (s *Simulator) SetHolding(addr uint16, values ...uint16) { set(s, s.holding, addr, values) }

// Holding returns n holding registers from addr on.
func (s *Simulator) Holding(addr uint16, n int) []uint16 { return get(s, s.holding, addr, n) }

// SetInput sets input registers from addr on.
func (s *Simulator) SetInput(addr uint16, values ...uint16) { set(s, s.input, addr, values) }

// Input returns n input registers from addr on.
func (s *Simulator) Input(addr uint16, n int) []uint16 { return get(s, s.input, addr, n) }

// SetCoils sets coils from addr on.
func (s *Simulator) SetCoils(addr uint16, values ...bool) { set(s, s.coils, addr, values) }

// Coils returns n coils from addr on.
func (s *Simulator) Coils(addr uint16, n int) []bool { return get(s, s.coils, addr, n) }

// SetDiscrete sets discrete inputs from addr on.
func (s *Simulator) SetDiscrete(addr uint16, values ...bool) { set(s, s.discrete, addr, values) }

// Discrete returns n discrete inputs from addr on.
func (s *Simulator) Discrete(addr uint16, n int) []bool { return get(s, s.discrete, addr, n) }

func set[T any](s *Simulator, table []T, addr uint16, values []T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	copy(table[addr:], values)
}

func get[T any](s *Simulator, table []T, addr uint16, n int) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := min(int(addr)+n, len(table))
	return append([]T(nil), table[addr:end]...)
}

// SimulateTemperature makes input register addr a temperature in tenths of a degree
// (as an int16) that wanders around 21.5 °C, by a step every period, as a sensor
// would; period 0 stops it. One register at a time: a new call replaces the last.
func (s *Simulator) SimulateTemperature(addr uint16, period time.Duration) {
	s.mu.Lock()
	if s.tempStop != nil {
		close(s.tempStop)
		s.tempStop = nil
	}
	if period <= 0 || s.closed {
		s.mu.Unlock()
		return
	}
	stop := make(chan struct{})
	s.tempStop = stop
	// One cycle of ±3 °C every 120 steps; the first step before SimulateTemperature
	// returns, so that the register never reads 0.
	temperature := func(step int) uint16 {
		return uint16(int16(215 + math.Round(30*math.Sin(2*math.Pi*float64(step)/120))))
	}
	s.input[addr] = temperature(0)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for step := 1; ; step++ {
			select {
			case <-t.C:
			case <-stop:
				return
			case <-s.quit:
				return
			}
			s.SetInput(addr, temperature(step))
		}
	}()
}

// handler answers the server library's requests from the tables.
type handler struct{ s *Simulator }

// begin counts a request of f, waits while the simulator is stalled, and returns the
// exception to answer with, if any. It returns with s.mu held when the error is nil.
func (h handler) begin(f Function) error {
	s := h.s
	s.mu.Lock()
	s.requests[f]++
	for s.stall != nil {
		ch := s.stall
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.quit:
			return modbus.ErrServerDeviceFailure
		}
		s.mu.Lock()
	}
	if err := s.exceptions[f]; err != nil {
		s.mu.Unlock()
		return err
	}
	return nil
}

// HandleCoils reads and writes coils (functions 1, 5 and 15).
func (h handler) HandleCoils(req *modbus.CoilsRequest) ([]bool, error) {
	f := ReadCoils
	if req.IsWrite {
		f = WriteCoils
	}
	if err := h.begin(f); err != nil {
		return nil, err
	}
	defer h.s.mu.Unlock()
	if req.IsWrite {
		copy(h.s.coils[req.Addr:], req.Args)
		return nil, nil
	}
	return append([]bool(nil), h.s.coils[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

// HandleDiscreteInputs reads discrete inputs (function 2).
func (h handler) HandleDiscreteInputs(req *modbus.DiscreteInputsRequest) ([]bool, error) {
	if err := h.begin(ReadDiscreteInputs); err != nil {
		return nil, err
	}
	defer h.s.mu.Unlock()
	return append([]bool(nil), h.s.discrete[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

// HandleHoldingRegisters reads and writes holding registers (functions 3, 6 and 16).
func (h handler) HandleHoldingRegisters(req *modbus.HoldingRegistersRequest) ([]uint16, error) {
	f := ReadHoldingRegisters
	if req.IsWrite {
		f = WriteHoldingRegisters
	}
	if err := h.begin(f); err != nil {
		return nil, err
	}
	defer h.s.mu.Unlock()
	if req.IsWrite {
		copy(h.s.holding[req.Addr:], req.Args)
		return nil, nil
	}
	return append([]uint16(nil), h.s.holding[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}

// HandleInputRegisters reads input registers (function 4).
func (h handler) HandleInputRegisters(req *modbus.InputRegistersRequest) ([]uint16, error) {
	if err := h.begin(ReadInputRegisters); err != nil {
		return nil, err
	}
	defer h.s.mu.Unlock()
	return append([]uint16(nil), h.s.input[req.Addr:int(req.Addr)+int(req.Quantity)]...), nil
}
