package live

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/furrowhq/furrow"
)

// NewMemoryBus returns a Bus that delivers within this process only: for a
// single instance, or tests. logger may be nil for slog.Default.
func NewMemoryBus(logger *slog.Logger) *Bus {
	h := newHub()
	return newBus(h, memoryTransport{h}, queueSize, logger)
}

// memoryTransport hands readings straight to the local hub.
type memoryTransport struct{ hub *hub }

var ready = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (m memoryTransport) send(_ context.Context, batch []furrow.LiveReading) error {
	for _, r := range batch {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		for _, t := range TopicsOf(r) {
			m.hub.deliver(t.String(), b)
		}
	}
	return nil
}

func (memoryTransport) watch(string) <-chan struct{} { return ready }
func (memoryTransport) unwatch(string)               {}
func (memoryTransport) close() error                 { return nil }
