package furrow

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration that is written as text ("30s", "2h",
// "1h30m"), so that workflow inputs and results read well in the Temporal
// UI. It also reads a JSON number of nanoseconds, the form recorded in
// histories written before it existed.
type Duration time.Duration

// String returns d as time.Duration does, without its zero tails: "2m"
// rather than "2m0s".
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// MarshalJSON writes d as a JSON string, as String returns it.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a duration string such as "10m" or a number of
// nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var ns int64
	if err := json.Unmarshal(b, &ns); err == nil {
		*d = Duration(ns)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string or a number of nanoseconds, got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// Durations converts a schedule of time.Duration.
func Durations(ds []time.Duration) []Duration {
	if ds == nil {
		return nil
	}
	out := make([]Duration, len(ds))
	for i, d := range ds {
		out[i] = Duration(d)
	}
	return out
}

// TimeDurations converts a schedule back to time.Duration.
func TimeDurations(ds []Duration) []time.Duration {
	if ds == nil {
		return nil
	}
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = time.Duration(d)
	}
	return out
}
