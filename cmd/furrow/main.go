// Command furrow is the Furrow service: device ingestion, the live-updates
// bus and signed webhook delivery on Temporal.
//
//	furrow dev                     everything in one process, with an embedded Temporal
//	furrow serve                   the API and the outbox dispatcher
//	furrow worker                  the Temporal worker
//	furrow migrate                 apply the database migrations
//	furrow admin create-user --email E
//	furrow bench ingest|baseline|delivery ...
//	furrow probe URL
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: furrow <command> [flags]

commands:
  dev                          run everything in one process (embedded Temporal, UI on :8233)
  serve                        run the API and the outbox dispatcher
  worker                       run the Temporal worker
  migrate                      apply database migrations
  admin create-user --email E  create a user and print {"id","email","token"}
  bench ingest|baseline|delivery  measure (see BENCHMARKS.md)

configuration is read from FURROW_* environment variables (see README.md)
`

// errUsage marks a command line that could not be understood.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, errUsage) {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "furrow:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	switch args[0] {
	case "dev", "serve", "worker":
		return runService(ctx, args[0], cfg, logger, stdout)
	case "migrate":
		return runMigrate(ctx, cfg, logger)
	case "admin":
		return runAdmin(ctx, cfg, args[1:], stdout)
	case "probe":
		return runProbe(ctx, args[1:], stdout)
	case "bench":
		return runBench(ctx, cfg, args[1:], stdout, logger)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q: %w", args[0], errUsage)
}

// runService runs one of the long-running commands with the profiler and
// the metrics listener beside it.
func runService(ctx context.Context, command string, cfg Config, log *slog.Logger, stdout io.Writer) error {
	startPprof(cfg.PprofAddr, log)
	obs, err := startObservability(ctx, cfg, log)
	if err != nil {
		return err
	}
	switch command {
	case "dev":
		return runDev(ctx, cfg, obs, log, stdout)
	case "serve":
		return runServe(ctx, cfg, obs, log)
	}
	return runWorker(ctx, cfg, obs, log)
}
