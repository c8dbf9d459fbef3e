package furrow

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Event types (docs/webhooks.md). The first four are the specification's;
// the webhook lifecycle types are in lifecycle.go.
const (
	EventMetricValue           = "metric.value"
	EventDeviceOffline         = "device.offline"
	EventTriggerFired          = "trigger.fired"
	EventRecommendationCreated = "recommendation.created"
)

// DefaultEventTypes are the specification's four types, in their
// documented order: what a webhook with no event types receives.
var DefaultEventTypes = []string{EventMetricValue, EventDeviceOffline, EventTriggerFired, EventRecommendationCreated}

// EventTypes lists every type of farm event, in their documented order:
// DefaultEventTypes, then the webhook lifecycle types, which only webhooks
// that list them receive. Farm events are stored, listed by the events API
// and delivered by subscription; webhook.test is none of these.
var EventTypes = []string{EventMetricValue, EventDeviceOffline, EventTriggerFired, EventRecommendationCreated,
	EventWebhookDisabled, EventWebhookEnabled}

// IsEventType reports whether t is one of EventTypes, the types a farm
// event may have and a webhook may subscribe to.
func IsEventType(t string) bool { return slices.Contains(EventTypes, t) }

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
	// TraceParent is the W3C traceparent of the request that stored the
	// event when tracing was on, so that its delivery continues the trace.
	// It is never delivered.
	TraceParent string `json:"-"`
}

// Size is the bytes of the event's data, what a page of the events list
// counts against MaxPageBytes.
func (e Event) Size() int { return len(e.Data) }

// OutboxEvent is an event as the outbox just stored it. Pending is the
// dispatcher's concern, not the envelope's: it is true when a webhook of
// the event's farm subscribes to the event's type, so that waking the
// dispatcher is worth it.
type OutboxEvent struct {
	Event
	Pending bool `json:"-"`
}

// eventIDPrefix starts every event id.
const eventIDPrefix = "evt_"

// EventID returns the evt_<uuid> identifier of the event whose uuid is id.
func EventID(id uuid.UUID) string { return eventIDPrefix + id.String() }

// NewEventID returns a fresh evt_<uuid> identifier of an event occurring
// now.
func NewEventID() string { return EventID(NewEventUUID(time.Now().UnixMilli())) }

// NewEventUUID returns a fresh UUIDv7 whose time is atMs, the event's
// occurred_at_ms, so that an event's id tells the day it occurred and a
// store partitioned by day finds it from the id alone. A time a UUIDv7
// cannot hold (before 1970, after the year 10889) gets a random v4 uuid.
func NewEventUUID(atMs int64) uuid.UUID {
	if atMs < 0 || atMs >= 1<<48 {
		return uuid.New()
	}
	u := uuid.Must(uuid.NewV7())
	for i := range 6 {
		u[i] = byte(atMs >> (40 - 8*i))
	}
	return u
}

// EventUUIDTime returns the time (Unix ms) a UUIDv7 event id holds; ok is
// false for other versions, whose time the id does not tell.
func EventUUIDTime(u uuid.UUID) (ms int64, ok bool) {
	if u.Version() != 7 {
		return 0, false
	}
	for i := range 6 {
		ms = ms<<8 | int64(u[i])
	}
	return ms, true
}

// ParseEventID returns the uuid inside an evt_<uuid> identifier, the uuid
// as ParseUUID reads it, or an EINVALID error.
func ParseEventID(id string) (uuid.UUID, error) {
	rest, ok := strings.CutPrefix(id, eventIDPrefix)
	if !ok {
		return uuid.Nil, errEventID
	}
	u, err := ParseUUID(rest)
	if err != nil {
		return uuid.Nil, errEventID
	}
	return u, nil
}

var errEventID = Errorf(EINVALID, "The event id must be evt_ followed by a UUID in the form %s.", UUIDForm)

// NewMetricValueEvent returns the metric.value event, with uuid id, of the
// stored reading r: it occurs at the reading's arrival.
func NewMetricValueEvent(id uuid.UUID, r Reading) Event {
	return Event{
		ID: EventID(id), Type: EventMetricValue, FarmID: r.FarmID, OccurredAtMs: r.Timestamp,
		Data: MetricValueData{DeviceID: r.DeviceID, MetricID: r.MetricID, Value: r.Value, Timestamp: r.Timestamp}.AppendJSON(make([]byte, 0, 128+len(r.Value))),
	}
}

// NewDeviceOfflineEvent returns the device.offline event, with uuid id, of
// a device of farm marked offline at atMs.
func NewDeviceOfflineEvent(id, farm uuid.UUID, d DeviceOfflineData, atMs int64) Event {
	return Event{ID: EventID(id), Type: EventDeviceOffline, FarmID: farm, OccurredAtMs: atMs, Data: mustJSON(d)}
}

// NewAppEvent returns an event the app emits through the events API: a
// fresh id, OccurredAtMs left for the store to set, and data, a JSON
// object, compacted. A type the app may not emit or data that is not an
// object, or one CheckEventData refuses, is EINVALID.
func NewAppEvent(typ string, farm uuid.UUID, data json.RawMessage) (Event, error) {
	if !AppEventType(typ) {
		return Event{}, Errorf(EINVALID, "The field type must be %s or %s.", EventTriggerFired, EventRecommendationCreated)
	}
	var buf bytes.Buffer
	if !bytes.HasPrefix(data, []byte("{")) || json.Compact(&buf, data) != nil {
		return Event{}, Errorf(EINVALID, "The field data must be a JSON object.")
	}
	if err := CheckEventData(buf.Bytes()); err != nil {
		return Event{}, err
	}
	return Event{ID: NewEventID(), Type: typ, FarmID: farm, Data: buf.Bytes()}, nil
}

// mustJSON encodes v, a struct of plain fields that always encodes.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
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

// EventFilter selects a farm's events, newest first; Before (a cursor of an
// earlier page) pages backwards stably.
type EventFilter struct {
	FarmID  uuid.UUID
	Type    string // "" = all
	SinceMs *int64
	Before  *Cursor
	Limit   int
}
