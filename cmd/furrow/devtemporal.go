//go:build !nodev

package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/furrowhq/furrow/temporal/devserver"
	"github.com/furrowhq/furrow/workflows"
)

// buildKind names the build in the figures of `furrow bench ingest`: the
// dev build's serve carries the embedded Temporal, about 100 MiB more
// resident memory than the production build's.
const buildKind = "dev"

// startDevTemporal starts the embedded Temporal of `furrow dev` with
// Furrow's search attributes registered, and returns its frontend address,
// its UI's URL and how to stop it.
func startDevTemporal(ctx context.Context, cfg Config, log *slog.Logger) (addr, uiURL string, stop func(), err error) {
	srv, err := devserver.Start(ctx, devserver.Options{
		FrontendAddr:     cfg.DevTemporalAddr,
		UIAddr:           cfg.DevUIAddr,
		Namespace:        cfg.TemporalNamespace,
		DataDir:          cfg.DevDataDir,
		SearchAttributes: workflows.SearchAttributes(),
		Logger:           log,
	})
	if err != nil {
		return "", "", nil, fmt.Errorf("embedded Temporal (FURROW_DEV_TEMPORAL_ADDR=%s, FURROW_DEV_UI_ADDR=%s, FURROW_DEV_DATA_DIR=%s): %w",
			cfg.DevTemporalAddr, cfg.DevUIAddr, cfg.DevDataDir, err)
	}
	log.Info("embedded Temporal started", "frontend", srv.FrontendAddr(), "ui", srv.UIURL(), "data", cfg.DevDataDir)
	return srv.FrontendAddr(), srv.UIURL(), func() { _ = srv.Stop() }, nil
}
