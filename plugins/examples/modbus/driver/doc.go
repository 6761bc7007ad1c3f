// Package driver is the Modbus TCP half of the example process plugin: it maps holding
// registers, coils, input registers and discrete inputs to typed points, reads and
// writes them with blocking I/O through github.com/simonvetter/modbus, and polls the
// points someone watches.
//
// It knows nothing of OPC UA nodes. A node manager built on it maps each variable to a
// point index of Options.Points, answers Read with Device.ReadPoints and Write with
// Device.WritePoint (mapping RangeError to BadOutOfRange, TypeError to BadTypeMismatch,
// ErrNotWritable to BadNotWritable, CommError to BadTimeout or BadCommunicationError,
// ExceptionError to BadDeviceFailure), turns nodemgr.WatchSet into Poller.Watch, pushes
// what the Poller reports through its nodemgr.Notifier, and reports Device.Health.
// The device's I/O blocks, so the manager calls the Device from goroutines of its own,
// never from an operation's method.
package driver
