package live

import (
	"strconv"
	"strings"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// maxTopicLen bounds a topic's text; the longest valid topic is far shorter.
const maxTopicLen = 128

// Topic is a live topic. Events marks the farm's events topic
// farms/{farm}/events; otherwise Device is uuid.Nil for the farm-wide
// readings topic farms/{farm}/readings, and the topic is
// farms/{farm}/devices/{device}/metrics/{metric} when it is set. Topics
// match exactly.
type Topic struct {
	Farm   uuid.UUID
	Device uuid.UUID
	Metric int32
	Events bool
}

// FarmTopic returns the topic of every reading of a farm.
func FarmTopic(farm uuid.UUID) Topic { return Topic{Farm: farm} }

// EventsTopic returns the topic of a farm's events: every farm event but
// metric.value, which the readings topics carry.
func EventsTopic(farm uuid.UUID) Topic { return Topic{Farm: farm, Events: true} }

// MetricTopic returns the topic of one device's readings of one metric.
func MetricTopic(farm, device uuid.UUID, metric int32) Topic {
	return Topic{Farm: farm, Device: device, Metric: metric}
}

// TopicsOf returns the two topics a reading is published to: its farm's and
// its device and metric's.
func TopicsOf(r furrow.LiveReading) [2]Topic {
	return [2]Topic{FarmTopic(r.FarmID), MetricTopic(r.FarmID, r.DeviceID, r.MetricID)}
}

// String returns the topic's canonical text, the one ParseTopic accepts.
func (t Topic) String() string {
	if t.Events {
		return "farms/" + t.Farm.String() + "/events"
	}
	if t.Device == uuid.Nil {
		return "farms/" + t.Farm.String() + "/readings"
	}
	return "farms/" + t.Farm.String() + "/devices/" + t.Device.String() +
		"/metrics/" + strconv.FormatInt(int64(t.Metric), 10)
}

// ParseTopics parses the topics of a connection request: at most
// MaxTopics, each as ParseTopic does. Errors are EINVALID *furrow.Errors.
func ParseTopics(raw []string) ([]Topic, error) {
	if len(raw) > MaxTopics {
		return nil, errTooManyTopics
	}
	topics := make([]Topic, 0, len(raw))
	for _, q := range raw {
		t, err := ParseTopic(q)
		if err != nil {
			return nil, err
		}
		topics = append(topics, t)
	}
	return topics, nil
}

var errTooManyTopics = furrow.Errorf(furrow.EINVALID, "A connection may watch at most %d topics.", MaxTopics)

// ParseTopic parses a topic in its canonical form: lower-case hyphenated
// uuids other than the nil uuid, and a metric id 1..2147483647 written
// without sign or leading zeros. Anything else is an EINVALID *furrow.Error.
func ParseTopic(s string) (Topic, error) {
	bad := furrow.Errorf(furrow.EINVALID,
		"A topic must be farms/{farm}/readings, farms/{farm}/events or farms/{farm}/devices/{device}/metrics/{metric}, with lower-case uuids and a metric id from 1 to 2147483647.")
	if len(s) > maxTopicLen {
		return Topic{}, bad
	}
	parts := strings.Split(s, "/")
	if len(parts) < 3 || parts[0] != "farms" {
		return Topic{}, bad
	}
	farm, ok := parseID(parts[1])
	if !ok {
		return Topic{}, bad
	}
	if len(parts) == 3 && parts[2] == "readings" {
		return FarmTopic(farm), nil
	}
	if len(parts) == 3 && parts[2] == "events" {
		return EventsTopic(farm), nil
	}
	if len(parts) != 6 || parts[2] != "devices" || parts[4] != "metrics" {
		return Topic{}, bad
	}
	device, ok := parseID(parts[3])
	if !ok {
		return Topic{}, bad
	}
	metric, ok := parseMetric(parts[5])
	if !ok {
		return Topic{}, bad
	}
	return MetricTopic(farm, device, metric), nil
}

// parseID accepts only the canonical text of a non-nil uuid, so that one
// topic has one spelling and exact matching cannot be bypassed.
func parseID(s string) (uuid.UUID, bool) {
	u, err := uuid.Parse(s)
	if err != nil || u == uuid.Nil || u.String() != s {
		return uuid.Nil, false
	}
	return u, true
}

func parseMetric(s string) (int32, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return int32(n), true
}
