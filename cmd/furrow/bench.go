package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

func runBench(ctx context.Context, cfg Config, args []string, stdout io.Writer, log *slog.Logger) error {
	return fmt.Errorf("bench: not available yet: %w", errUsage)
}
