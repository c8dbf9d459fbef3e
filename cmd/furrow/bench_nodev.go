//go:build nodev && !bench

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
)

// runBench stands in for the measuring tools, which the production build
// leaves out.
func runBench(context.Context, settings, []string, io.Writer, *slog.Logger) error {
	return errors.New("bench: the measuring tools are not in the production build; build with -tags nodev,bench (or without nodev)")
}
