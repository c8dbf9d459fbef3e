package live

import (
	"strconv"
	"sync"
)

// Sink receives the messages of the topics it subscribed to. Send must not
// block: it is called while the hub routes a message to every subscriber.
type Sink interface {
	Send(msg []byte)
}

// hub routes messages to local sinks by exact topic.
type hub struct {
	mu     sync.RWMutex
	topics map[string]map[Sink]struct{}
}

func newHub() *hub { return &hub{topics: make(map[string]map[Sink]struct{})} }

// add subscribes s to topic.
func (h *hub) add(topic string, s Sink) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sinks := h.topics[topic]
	if sinks == nil {
		sinks = make(map[Sink]struct{})
		h.topics[topic] = sinks
	}
	sinks[s] = struct{}{}
}

// remove unsubscribes s from topic and reports whether the topic has no
// subscriber left.
func (h *hub) remove(topic string, s Sink) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	sinks := h.topics[topic]
	delete(sinks, s)
	if len(sinks) == 0 {
		delete(h.topics, topic)
		return true
	}
	return false
}

// deliver sends a reading's JSON, with the topic added, to every sink of
// the topic.
func (h *hub) deliver(topic string, reading []byte) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	sinks := h.topics[topic]
	if len(sinks) == 0 {
		return
	}
	msg := withTopic(reading, topic)
	for s := range sinks {
		s.Send(msg)
	}
}

// withTopic adds a "topic" member to a JSON object, so that a client
// subscribed to several topics can tell which one a message came from.
func withTopic(obj []byte, topic string) []byte {
	if len(obj) < 2 || obj[len(obj)-1] != '}' {
		return obj
	}
	out := make([]byte, 0, len(obj)+len(topic)+12)
	out = append(out, obj[:len(obj)-1]...)
	if len(obj) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"topic":`...)
	out = strconv.AppendQuote(out, topic)
	return append(out, '}')
}
