package live

import (
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

// deliver sends a message's JSON to every sink of the topic.
func (h *hub) deliver(topic string, msg []byte) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.topics[topic] {
		s.Send(msg)
	}
}
