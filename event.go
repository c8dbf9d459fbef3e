package furrow

import (
	"encoding/json"
	"strings"

	"github.com/google/uuid"
)

// Event types of the spec.
const (
	EventMetricValue           = "metric.value"
	EventDeviceOffline         = "device.offline"
	EventTriggerFired          = "trigger.fired"
	EventRecommendationCreated = "recommendation.created"
)

// EventTypes lists every event type, in the spec's order.
var EventTypes = []string{EventMetricValue, EventDeviceOffline, EventTriggerFired, EventRecommendationCreated}

// IsEventType reports whether t is one of EventTypes.
func IsEventType(t string) bool {
	for _, e := range EventTypes {
		if e == t {
			return true
		}
	}
	return false
}

// AppEventType reports whether the app may emit t through the events API.
func AppEventType(t string) bool {
	return t == EventTriggerFired || t == EventRecommendationCreated
}

// Event is a farm event: the envelope delivered to webhooks. ID has the form
// evt_<uuid>.
type Event struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	FarmID       uuid.UUID       `json:"farm_id"`
	OccurredAtMs int64           `json:"occurred_at_ms"`
	Data         json.RawMessage `json:"data"`
	// Pending is set on an event just stored when a webhook of its farm
	// subscribes to its type, so the dispatcher has work to do. It is not
	// part of the envelope.
	Pending bool `json:"-"`
}

// NewEventID returns a fresh evt_<uuid> identifier.
func NewEventID() string { return "evt_" + uuid.NewString() }

// ParseEventID returns the uuid inside an evt_<uuid> identifier, or an
// EINVALID error.
func ParseEventID(id string) (uuid.UUID, error) {
	rest, ok := strings.CutPrefix(id, "evt_")
	if !ok {
		return uuid.Nil, Errorf(EINVALID, "event id must have the form evt_<uuid>")
	}
	u, err := uuid.Parse(rest)
	if err != nil {
		return uuid.Nil, Errorf(EINVALID, "event id must have the form evt_<uuid>")
	}
	return u, nil
}

// MetricValueData is the data of a metric.value event. Timestamp is an
// integer here, unlike the string in the stored Reading.
type MetricValueData struct {
	DeviceID  uuid.UUID `json:"device_id"`
	MetricID  int32     `json:"metric_id"`
	Value     string    `json:"value"`
	Timestamp int64     `json:"timestamp"`
}

// DeviceOfflineData is the data of a device.offline event.
type DeviceOfflineData struct {
	DeviceID       uuid.UUID `json:"device_id"`
	LastSeenMs     int64     `json:"last_seen_ms"`
	OfflineAfterMs int64     `json:"offline_after_ms"`
}

// EventFilter selects a farm's events, newest first.
type EventFilter struct {
	FarmID  uuid.UUID
	Type    string // "" = all
	SinceMs *int64
	Limit   int
}
