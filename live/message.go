package live

import (
	"encoding/json"

	"github.com/furrowhq/furrow"
)

// message is one thing published on the bus: a reading, for its two
// topics, or a farm event (when event is set), for its farm's events topic.
// id names the publication: two readings alike are two messages, while the
// one message a socket receives on two of its topics is sent to it once.
type message struct {
	id      uint64
	reading furrow.LiveReading
	event   *furrow.Event
}

// size is the bytes of the message's value or data, what the bus's queue
// counts against queueBytes.
func (m message) size() int {
	if m.event != nil {
		return m.event.Size()
	}
	return m.reading.Size()
}

// sizeOf is the sum of the messages' sizes.
func sizeOf(batch []message) int64 {
	var n int64
	for _, m := range batch {
		n += int64(m.size())
	}
	return n
}

// topics returns the topics the message goes to.
func (m message) topics() []Topic {
	if m.event != nil {
		return []Topic{EventsTopic(m.event.FarmID)}
	}
	t := TopicsOf(m.reading)
	return t[:]
}

// encode returns what subscribers receive: the reading's JSON with
// farm_id, or the event's envelope.
func (m message) encode() ([]byte, error) {
	if m.event != nil {
		return json.Marshal(m.event)
	}
	// The appender directly: json.Marshal would check and compact its
	// output again.
	return m.reading.AppendJSON(make([]byte, 0, 176+len(m.reading.Value))), nil
}
