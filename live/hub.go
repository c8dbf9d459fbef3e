package live

import (
	"sync"
)

// Sink receives the messages of the topics it subscribed to. Its methods
// must not block: they are called while the hub routes a message, or a
// loss, to every subscriber.
type Sink interface {
	// Send gets a message of one publication. id names the publication,
	// the same on each of its topics, so that a sink subscribed to several
	// of them can take it once.
	Send(id uint64, msg []byte)
	// Lost tells that the bus lost the subscription of t: messages of t
	// may be missed until it is confirmed again, when the channel Watch
	// returns for t closes.
	Lost(t Topic)
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

// deliver sends a message of publication id to every sink of the topic.
func (h *hub) deliver(topic string, id uint64, msg []byte) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.topics[topic] {
		s.Send(id, msg)
	}
}

// lose tells every sink of topic that its subscription was lost.
func (h *hub) lose(topic string) {
	t, err := ParseTopic(topic)
	if err != nil {
		return // not a topic's: Bus.Watch names every topic it watches
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.topics[topic] {
		s.Lost(t)
	}
}
