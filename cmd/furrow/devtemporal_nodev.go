//go:build nodev

package main

import (
	"context"
	"errors"
	"log/slog"
)

// buildKind names the build in the figures of `furrow bench ingest`.
const buildKind = "production"

// startDevTemporal is absent from production builds (-tags nodev), which
// leave the embedded Temporal and its UI out of the binary; `furrow dev`
// then needs FURROW_TEMPORAL_ADDRESS.
func startDevTemporal(context.Context, Config, *slog.Logger) (string, string, func(), error) {
	return "", "", nil, errors.New("this furrow was built with -tags nodev, without the embedded Temporal: set FURROW_TEMPORAL_ADDRESS")
}
