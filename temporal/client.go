// Package temporal connects Furrow to Temporal: the client, the worker that
// runs the delivery engine, and the DeliveryControl the API uses.
package temporal

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// Options says which Temporal to dial.
type Options struct {
	Address   string // host:port of the frontend
	Namespace string // "" means "default"
	Logger    *slog.Logger
}

// Dial connects to Temporal and checks the connection. It returns an error
// when the frontend cannot be reached.
func Dial(ctx context.Context, o Options) (client.Client, error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  o.Address,
		Namespace: o.Namespace,
		Logger:    tlog.NewStructuredLogger(logger.With("component", "temporal")),
	})
	if err != nil {
		return nil, fmt.Errorf("dial temporal at %s: %w", o.Address, err)
	}
	return c, nil
}
