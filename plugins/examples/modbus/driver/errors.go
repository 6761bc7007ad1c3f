package driver

import (
	"errors"
	"fmt"
	"os"

	"github.com/simonvetter/modbus"
)

// ErrNotWritable is the error of a write to a point that is not Writable. A node manager
// answers it with BadNotWritable.
var ErrNotWritable = errors.New("point is not writable")

// RangeError is the error of a write whose value the point's type cannot hold: 70000 to
// a uint16, -1 to a uint32, 1e39 to a float32. A node manager answers it with
// BadOutOfRange.
type RangeError struct {
	Point string // the point's name
	Type  Type   // the point's type
	Value any    // the value written
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("modbus: point %q: %v is out of range for %v", e.Point, e.Value, e.Type)
}

// TypeError is the error of a write whose value is of a kind the point cannot take: a
// number to a bool, a bool to a register, a fraction to an integer, a string to
// anything. A node manager answers it with BadTypeMismatch.
type TypeError struct {
	Point string // the point's name
	Type  Type   // the point's type
	Value any    // the value written
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("modbus: point %q: cannot write %T %v to %v", e.Point, e.Value, e.Value, e.Type)
}

// ExceptionError is a request the device answered with a Modbus exception (Modbus
// Application Protocol v1.1b3 §7), such as Illegal Data Address. The connection is
// fine; only the points of that request failed. Err is the exception, one of the
// modbus.Err* values of github.com/simonvetter/modbus. A node manager answers it with
// BadDeviceFailure.
type ExceptionError struct {
	Table   Table  // the table of the request
	Address uint16 // its first register or bit
	Count   uint16 // how many it asked for
	Write   bool   // whether it was a write
	Err     error  // the exception
}

func (e *ExceptionError) Error() string {
	op := "read"
	if e.Write {
		op = "write"
	}
	return fmt.Sprintf("modbus: %s of %d %v at %d: %v", op, e.Count, e.Table, e.Address, e.Err)
}

func (e *ExceptionError) Unwrap() error { return e.Err }

// CommError is a request that got no answer: the connection could not be made, broke,
// or the answer did not come within the timeout, or came garbled. The Device drops the
// connection and makes a new one on the next request. A node manager answers it with
// BadTimeout when Timeout says so and BadCommunicationError otherwise.
type CommError struct {
	Err error // what the client library or the network said
}

func (e *CommError) Error() string { return "modbus: " + e.Err.Error() }

func (e *CommError) Unwrap() error { return e.Err }

// Timeout reports whether the device did not answer in time.
func (e *CommError) Timeout() bool {
	return errors.Is(e.Err, modbus.ErrRequestTimedOut) || os.IsTimeout(e.Err)
}

// exception reports whether err, from the client library, is a Modbus exception: an
// answer from the device, after which the connection stays usable.
func exception(err error) bool {
	for _, e := range exceptions {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// exceptions are the errors by which the client library reports the exception codes
// of Modbus Application Protocol v1.1b3 §7.
var exceptions = [...]error{
	modbus.ErrIllegalFunction, modbus.ErrIllegalDataAddress, modbus.ErrIllegalDataValue,
	modbus.ErrServerDeviceFailure, modbus.ErrAcknowledge, modbus.ErrServerDeviceBusy,
	modbus.ErrMemoryParityError, modbus.ErrGWPathUnavailable, modbus.ErrGWTargetFailedToRespond,
}
