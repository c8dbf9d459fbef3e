package furrow

import (
	"crypto/sha256"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// MaxValueBytes bounds the text of a reading's value.
const MaxValueBytes = 1024

// Reading is one stored sensor reading. Timestamp is the server-assigned
// arrival time in epoch milliseconds; in JSON it is a string, as is Value.
type Reading struct {
	DeviceID  uuid.UUID
	MetricID  int32
	Value     string
	Timestamp int64
	// FarmID is the farm of the device. It is not part of the Reading JSON;
	// live messages add it (see LiveReading).
	FarmID uuid.UUID
}

// Size is the bytes of the reading's value, what a page of the readings
// list counts against MaxPageBytes.
func (r Reading) Size() int { return len(r.Value) }

// Validate checks the values a device sends: a metric id from 1 to
// 2147483647, and a value of 1 to MaxValueBytes bytes of UTF-8 text
// without NUL characters (PostgreSQL text cannot hold NUL). Every failure is
// an EINVALID *Error naming the field at fault.
func (r Reading) Validate() error {
	switch {
	case r.MetricID < 1:
		return Errorf(EINVALID, "The field metric_id must be an integer from 1 to %d.", math.MaxInt32)
	case r.Value == "":
		return Errorf(EINVALID, "The field value must not be empty.")
	case len(r.Value) > MaxValueBytes:
		return Errorf(EINVALID, "The field value must be at most %d bytes.", MaxValueBytes)
	case strings.ContainsRune(r.Value, 0):
		return Errorf(EINVALID, "The field value must not contain a NUL character.")
	case !utf8.ValidString(r.Value):
		return Errorf(EINVALID, "The field value must be valid UTF-8 text.")
	}
	return nil
}

type readingJSON struct {
	DeviceID  uuid.UUID `json:"device_id"`
	MetricID  int32     `json:"metric_id"`
	Value     string    `json:"value"`
	Timestamp string    `json:"timestamp"`
}

// MarshalJSON writes the Reading resource of the API: value and timestamp
// as strings.
func (r Reading) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, 128+len(r.Value))), nil
}

// UnmarshalJSON reads the Reading resource back (clients and tests).
func (r *Reading) UnmarshalJSON(b []byte) error {
	var v readingJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	ts, err := strconv.ParseInt(v.Timestamp, 10, 64)
	if err != nil {
		return err
	}
	*r = Reading{DeviceID: v.DeviceID, MetricID: v.MetricID, Value: v.Value, Timestamp: ts}
	return nil
}

// LiveReading is the message published on the live bus: the Reading JSON
// plus farm_id.
type LiveReading struct {
	Reading
}

// MarshalJSON writes the Reading fields and farm_id.
func (l LiveReading) MarshalJSON() ([]byte, error) {
	return l.AppendJSON(make([]byte, 0, 176+len(l.Value))), nil
}

// ReadingFilter selects readings of one farm for the polling API. Results
// are newest first; Before (a cursor of an earlier page) pages backwards
// stably.
type ReadingFilter struct {
	FarmID   uuid.UUID
	DeviceID *uuid.UUID
	MetricID *int32
	SinceMs  *int64
	Before   *Cursor
	Limit    int
	// ScanRows bounds the readings of the farm a page filtered by a metric
	// alone or a device alone reads (ScanLimit); 0 is MaxScanRows.
	ScanRows int
}

// MaxScanRows is how many of a farm's readings, newest first, a page
// filtered by a metric alone or by a device alone reads at most. The
// readings' indexes are (farm, time) and (device, metric, time): none
// orders a farm's readings of one metric, or a device's of every metric,
// by time, so such a page reads the farm's and keeps the matching ones,
// and a rare metric or a device long silent would otherwise have it read
// every reading the farm ever stored. (An index of (device, time) would
// order the latter, at a cost to every reading stored.) A page that finds
// fewer than its limit among them ends early with the cursor of the last
// one read.
const MaxScanRows = 20_000

// ScanLimit is how many of the farm's readings a page of f reads at most,
// and 0 when an index gives f's readings in order (no filter, or a device
// and a metric), so that the page reads only what it returns.
func (f ReadingFilter) ScanLimit() int {
	switch {
	case (f.MetricID == nil) == (f.DeviceID == nil):
		return 0
	case f.ScanRows > 0:
		return f.ScanRows
	}
	return MaxScanRows
}

// IdempotencyWindow is how long an Idempotency-Key of a reading is
// remembered.
const IdempotencyWindow = 24 * time.Hour

// MaxIdempotencyKey bounds the length of an Idempotency-Key.
const MaxIdempotencyKey = 255

// Idempotency is a reading request's Idempotency-Key and the fingerprint
// (SHA-256) of its body: a retry carries the same key and body and gets the
// original reading back; the same key with another body is a conflict.
type Idempotency struct {
	Key         string
	Fingerprint [sha256.Size]byte
}

// ValidIdempotencyKey reports whether k is a well-formed Idempotency-Key:
// 1 to MaxIdempotencyKey printable ASCII characters.
func ValidIdempotencyKey(k string) bool {
	if k == "" || len(k) > MaxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}
