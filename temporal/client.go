// Package temporal connects Furrow to Temporal: the client, the worker that
// runs the delivery engine, and the DeliveryControl the API uses.
package temporal

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
)

// Options says which Temporal to dial.
type Options struct {
	Address   string // host:port of the frontend
	Namespace string // "" means "default"
	Logger    *slog.Logger
	// Metrics receives the SDK's client and worker metrics; nil: none.
	Metrics client.MetricsHandler
	// Interceptors wrap the client and its workers (tracing); nil: none.
	Interceptors []interceptor.ClientInterceptor
	// Gzip compresses the gRPC messages to and from the frontend. Off by
	// default: Furrow's messages are small, and on a local network the
	// compression costs more CPU (about 8% of a serve's) than it saves.
	Gzip bool
}

// clientOptions returns the SDK options for o, logging through o.Logger.
func clientOptions(o Options) client.Options {
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return client.Options{
		HostPort:          o.Address,
		Namespace:         o.Namespace,
		Logger:            tlog.NewStructuredLogger(logger.With("component", "temporal")),
		MetricsHandler:    o.Metrics,
		Interceptors:      o.Interceptors,
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: compression(o.Gzip)},
	}
}

func compression(gzip bool) client.GrpcCompression {
	if gzip {
		return &client.GrpcCompressionGzip{}
	}
	return &client.GrpcCompressionNone{}
}

// Dial connects to Temporal and checks the connection. It returns an error
// when the frontend cannot be reached.
func Dial(ctx context.Context, o Options) (client.Client, error) {
	c, err := client.DialContext(ctx, clientOptions(o))
	if err != nil {
		return nil, fmt.Errorf("dial temporal at %s: %w", o.Address, err)
	}
	return c, nil
}

// DialLazy returns a client that connects on first use, so that a process
// can start, and keep work in its outbox, while Temporal is down.
func DialLazy(o Options) (client.Client, error) {
	return client.NewLazyClient(clientOptions(o))
}
