// Command furrow is the Furrow service: device ingestion, the live-updates
// bus and signed webhook delivery on Temporal.
//
//	furrow dev                     everything in one process, with an embedded Temporal
//	furrow serve                   the API and the outbox dispatcher
//	furrow worker                  the Temporal worker
//	furrow migrate                 apply the database migrations
//	furrow admin create-user --email E
//	furrow admin seal-secrets|reseal [--batch N]
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
  serve                        run the API, the outbox dispatcher and first delivery attempts
  worker                       run the Temporal worker
  migrate                      apply database migrations
  admin create-user --email E  create a user and print {"id","email","token"}
  admin seal-secrets           seal the webhook secrets stored unsealed (see --help)
  admin reseal                 re-seal webhook secrets with the key ring's first key (see --help)
  bench ingest|baseline|delivery  measure (see BENCHMARKS.md)
  probe URL                    exit 0 when URL answers 200 (container health checks)

configuration is read from FURROW_* environment variables (see docs/operating/configuration.md)
`

// commandUsage is the usage of each command without flags of its own,
// printed by `furrow <command> --help`. Commands with flags print their
// flag set's usage instead.
var commandUsage = map[string]string{
	"dev":     "usage: furrow dev\n\nrun everything in one process: API on FURROW_HTTP_ADDR, embedded Temporal, Temporal UI, dispatcher, worker\n",
	"serve":   "usage: furrow serve\n\nrun the API, the outbox dispatcher and a worker of first delivery attempts (local activities)\n",
	"worker":  "usage: furrow worker\n\nrun the Temporal worker\n",
	"migrate": "usage: furrow migrate\n\napply the embedded database migrations\n",
	"admin":   "usage: furrow admin create-user|seal-secrets|reseal [flags]\n\ncreate-user --email E creates a user and prints {\"id\",\"email\",\"token\"};\nseal-secrets and reseal seal the stored webhook secrets; furrow admin <command> --help tells more\n",
	"bench":   "usage: furrow bench ingest|baseline|delivery [flags]\n\nthe measuring tools of BENCHMARKS.md; furrow bench <tool> --help lists a tool's flags\n",
	"probe":   "usage: furrow probe URL\n\nexit 0 when URL answers 200 (container health checks)\n",
}

// errUsage marks a command line that could not be understood. Its text
// ends the message main prints above the usage, after what was wrong.
var errUsage = errors.New("invalid command line")

// errHelp marks a command line that asked for help, which was printed.
var errHelp = errors.New("help printed")

// wantsHelp reports whether args ask for help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			return true
		}
	}
	return false
}

// hasFlags reports whether the command line names a command with a flag
// set, which prints its own usage.
func hasFlags(args []string) bool {
	return len(args) > 1 && ((args[0] == "admin" && adminCommands[args[1]] != nil) ||
		(args[0] == "bench" && !wantsHelp(args[1:2])))
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(report(err, os.Stderr))
}

// report prints err, if any, on stderr and returns the exit status: 2 for
// a command line that could not be understood, with what was wrong in it
// (when more is known than that) above the usage, 1 for other errors.
func report(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		if err != errUsage {
			fmt.Fprintln(stderr, "furrow:", err)
		}
		fmt.Fprint(stderr, usage)
		return 2
	}
	fmt.Fprintln(stderr, "furrow:", err)
	return 1
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	if u, ok := commandUsage[args[0]]; ok && wantsHelp(args[1:]) && !hasFlags(args) {
		fmt.Fprint(stdout, u)
		return nil
	}
	err := runCommand(ctx, args, getenv, stdout, stderr)
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

// runCommand runs the command args[0].
func runCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	// help, probe and the command lines of admin and bench are read before
	// any setting, so a malformed one (or an unreadable key-ring file) does
	// not fail them: probe is the containers' health check, and help is how
	// an operator finds the fix.
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "probe":
		return runProbe(ctx, args[1:], stdout)
	case "dev", "serve", "worker", "migrate":
		// A flag such as --dry-run must not be ignored by a command that
		// then does everything.
		if len(args) > 1 {
			return fmt.Errorf("%s: unexpected argument %q; %s takes no arguments, its settings are FURROW_* environment variables: %w",
				args[0], args[1], args[0], errUsage)
		}
	case "admin", "bench":
	default:
		return fmt.Errorf("unknown command %q: %w", args[0], errUsage)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	load := func() (Config, error) { return loadConfig(getenv) }
	switch args[0] {
	case "admin":
		return runAdmin(ctx, load, args[1:], stdout, logger)
	case "bench":
		return runBench(ctx, load, args[1:], stdout, logger)
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	if args[0] == "migrate" {
		return runMigrate(ctx, cfg, logger)
	}
	buf := newLogBuffer(stderr, logFlushEvery)
	defer buf.close()
	return runService(ctx, args[0], cfg, serviceLogger(buf), stdout)
}

// settings reads the configuration. Commands with flags call it once their
// command line is parsed and checked, so that their help and usage errors
// never depend on a setting.
type settings func() (Config, error)

// runService runs one of the long-running commands with the profiler and
// the metrics listener beside it.
func runService(ctx context.Context, command string, cfg Config, log *slog.Logger, stdout io.Writer) error {
	stopPprof, err := startPprof(cfg.PprofAddr, log)
	if err != nil {
		return err
	}
	defer stopPprof()
	obs, err := startObservability(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer obs.stop()
	if command != "dev" {
		warnUnsealed(cfg, log)
	}
	// Here, once for dev, serve and worker alike: each sends deliveries
	// (worker the retries), so each says it may send them anywhere.
	if cfg.WebhookAllowPrivate {
		log.Warn("FURROW_WEBHOOK_ALLOW_PRIVATE is on: webhooks may point at http, loopback and private addresses; never use this in production")
	}
	switch command {
	case "dev":
		return runDev(ctx, cfg, obs, log, stdout)
	case "serve":
		return runServe(ctx, cfg, obs, log)
	}
	return runWorker(ctx, cfg, obs, log)
}
