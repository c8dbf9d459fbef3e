package furrow

import (
	"time"

	"github.com/google/uuid"
)

// Device is one physical sensor claimed on a farm. Its API key is never
// stored, only a hash of it; the key is shown once when issued.
type Device struct {
	ID     uuid.UUID `json:"id"`
	FarmID uuid.UUID `json:"-"`
	Name   string    `json:"name"`
	// LastSeenMs is the arrival time of the latest reading; nil before the
	// first one.
	LastSeenMs *int64 `json:"last_seen_ms"`
	// OfflineSinceMs is set when the device was marked offline and cleared
	// by its next reading.
	OfflineSinceMs *int64 `json:"-"`
}

// DeviceKeyPrefix starts every device API key.
const DeviceKeyPrefix = "fdk_"

// Device reporting states.
const (
	DeviceNever     = "never"
	DeviceReporting = "reporting"
	DeviceStale     = "stale"
	DeviceOffline   = "offline"
)

// Thresholds are the reporting thresholds of devices.
type Thresholds struct {
	StaleAfter   time.Duration
	OfflineAfter time.Duration
}

// Status returns the reporting state of d at now: never before its first
// reading; offline once marked offline or past OfflineAfter; stale past
// StaleAfter; reporting otherwise.
func (d Device) Status(now time.Time, t Thresholds) string {
	if d.LastSeenMs == nil {
		return DeviceNever
	}
	age := time.Duration(now.UnixMilli()-*d.LastSeenMs) * time.Millisecond
	switch {
	case d.OfflineSinceMs != nil || age >= t.OfflineAfter:
		return DeviceOffline
	case age >= t.StaleAfter:
		return DeviceStale
	}
	return DeviceReporting
}
