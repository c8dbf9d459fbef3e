// Package furrow holds the domain of the Furrow service: readings, events,
// devices, farms, users, webhooks and delivery attempts, the one error type
// every layer speaks, and the small service interfaces that the store, the
// API and the delivery engine depend on. It imports no other package of the
// project, so dependencies point inward to it.
package furrow

import "time"

// Clock tells the current time. Store methods and activities take "now" from
// a Clock so that tests can control time.
type Clock interface {
	Now() time.Time
}

// SystemClock is the Clock backed by time.Now.
type SystemClock struct{}

// Now returns the current wall-clock time.
func (SystemClock) Now() time.Time { return time.Now() }

// ClockFunc adapts a function to the Clock interface.
type ClockFunc func() time.Time

// Now calls f.
func (f ClockFunc) Now() time.Time { return f() }

// Millis converts t to epoch milliseconds, the unit the API speaks.
func Millis(t time.Time) int64 { return t.UnixMilli() }
