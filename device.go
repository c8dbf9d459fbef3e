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

// DeviceFilter selects a page of a farm's devices, which are listed by
// name and then by id.
type DeviceFilter struct {
	FarmID uuid.UUID
	// After, when set, starts the page after that place: the previous
	// page's last device.
	After *DevicePlace
	// Limit is the page size as ListLimit makes it. A whole farm is read
	// page by page (see api's device list), never in one answer, so that
	// its size bounds no one's memory.
	Limit int
}

// DevicePlace is a device's place in its farm's list, the cursor of a page
// of devices. It holds the name as well as the id so that the list goes on
// from the same place whatever became of that device meanwhile.
type DevicePlace struct {
	Name string
	ID   uuid.UUID
}

// Place is d's place in its farm's list.
func (d Device) Place() DevicePlace { return DevicePlace{Name: d.Name, ID: d.ID} }
