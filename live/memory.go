package live

import (
	"context"
	"log/slog"

	"github.com/google/uuid"
)

// NewMemoryBus returns a Bus that delivers within this process only: for a
// single instance, or tests. logger may be nil for slog.Default.
func NewMemoryBus(logger *slog.Logger) *Bus {
	h := newHub()
	return newBus(h, memoryTransport{h}, queueSize, 0, logger)
}

// memoryTransport hands messages straight to the local hub.
type memoryTransport struct{ hub *hub }

var ready = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (m memoryTransport) send(_ context.Context, batch []message) error {
	for _, msg := range batch {
		b, err := msg.encode()
		if err != nil {
			return err
		}
		for _, t := range msg.topics() {
			m.hub.deliver(t.String(), msg.id, b)
		}
	}
	return nil
}

// wants is always true: the hub finds a message's sinks as cheaply.
func (memoryTransport) wants(uuid.UUID) bool { return true }

func (memoryTransport) watch(string) <-chan struct{} { return ready }
func (memoryTransport) unwatch(string)               {}
func (memoryTransport) close() error                 { return nil }
