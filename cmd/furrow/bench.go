//go:build !nodev || bench

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/furrowhq/furrow/internal/bench"
)

// runBench handles `furrow bench baseline|ingest|delivery`; BENCHMARKS.md
// describes each. It prints the figures, then fails if a guarantee was
// broken (a 5xx, an unstored 201, an undelivered event). Each tool reads
// the settings with load once its flags are parsed and checked, and the
// collector is paced then, as they say.
func runBench(ctx context.Context, load settings, args []string, stdout io.Writer, log *slog.Logger) error {
	if len(args) == 0 {
		return fmt.Errorf("bench: expected baseline, ingest or delivery: %w", errUsage)
	}
	read := load
	load = func() (Config, error) {
		cfg, err := read()
		if err == nil {
			paceBenchGC(cfg)
		}
		return cfg, err
	}
	fs := flag.NewFlagSet("furrow bench "+args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() { printBenchHelp(fs, args[0]) }
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	switch args[0] {
	case "baseline":
		return benchBaseline(ctx, load, fs, args[1:], stdout, jsonOut)
	case "ingest":
		return benchIngest(ctx, load, fs, args[1:], stdout, log, jsonOut)
	case "delivery":
		return benchDelivery(ctx, load, fs, args[1:], stdout, log, jsonOut)
	}
	return fmt.Errorf("bench: unknown tool %q: %w", args[0], errUsage)
}

func benchBaseline(ctx context.Context, load settings, fs *flag.FlagSet, args []string, out io.Writer, jsonOut *bool) error {
	conc := fs.Int("concurrency", 64, "connections")
	dur := fs.Duration("duration", 10*time.Second, "how long to run")
	warm := fs.Duration("warmup", 2*time.Second, "how long to run first, unmeasured, while connections open")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *conc < 1 || *dur <= 0 || *warm < 0 {
		return fmt.Errorf("bench baseline: --concurrency and --duration must be positive: %w", errUsage)
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	r, err := bench.Baseline(ctx, bench.BaselineConfig{DatabaseURL: cfg.DatabaseURL, Concurrency: *conc, Duration: *dur, Warmup: *warm})
	if err != nil {
		return err
	}
	if *jsonOut {
		return json.NewEncoder(out).Encode(r)
	}
	r.Print(out)
	return nil
}

func benchIngest(ctx context.Context, load settings, fs *flag.FlagSet, args []string, out io.Writer, log *slog.Logger, jsonOut *bool) error {
	c := bench.IngestConfig{Environ: os.Environ(), Logger: log}
	fs.StringVar(&c.URL, "url", "", "API to measure (its database is FURROW_DATABASE_URL); empty starts `furrow serve` on a scratch database")
	fs.StringVar(&c.RedisURL, "redis", "", "Redis of the started server (rate limiter and bus); default FURROW_REDIS_URL")
	fs.IntVar(&c.Devices, "devices", bench.DefaultIngestDevices, "devices, each with its own key; requests go to each in turn (the default lets a run of 12s, warm-up included, get 100,000 201s a second before the rate limit caps it, and one of a minute 20,000; a warning says when the limit could cap a run)")
	fs.IntVar(&c.Concurrency, "concurrency", 64, "connections")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "how long to post")
	fs.DurationVar(&c.Warmup, "warmup", 2*time.Second, "how long to post first, reported apart (connections opened, keys learnt); longer when needed for every device to post once")
	fs.Float64Var(&c.Rate, "rate", 0, "requests per second in total; 0 is full speed")
	fs.IntVar(&c.Pid, "pid", 0, "process id of the server under test, to report its memory")
	skip := fs.Bool("skip-baseline", false, "do not run the baseline first")
	skipCeilings := fs.Bool("skip-ceilings", false, "do not measure the machine's HTTP ceiling (in turns with the ingest) and database ceiling (before it)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if c.Devices < 1 || c.Concurrency < 1 || c.Duration <= 0 || c.Rate < 0 || c.Warmup < 0 {
		return fmt.Errorf("bench ingest: --devices, --concurrency and --duration must be positive: %w", errUsage)
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	c.DatabaseURL, c.TemporalAddress = cfg.DatabaseURL, cfg.TemporalAddress
	unlessGiven(fs, "redis", &c.RedisURL, cfg.RedisURL)
	if c.Binary, err = os.Executable(); err != nil {
		return err
	}
	var rep struct {
		Baseline *bench.BaselineResult `json:"baseline,omitempty"`
		Ceilings *bench.Ceilings       `json:"ceilings,omitempty"`
		Ingest   bench.IngestResult    `json:"ingest"`
		Ratio    float64               `json:"ratio,omitempty"`
		// RateCap is the most 201/s the rate limit allows this fleet.
		RateCap float64 `json:"rate_cap"`
		// HTTPRatio and DatabaseRatio are the 201/s over each ceiling.
		HTTPRatio     float64 `json:"http_ceiling_ratio,omitempty"`
		DatabaseRatio float64 `json:"database_ceiling_ratio,omitempty"`
		// Build is the build of the binary, which serves when no --url
		// is given: "production" (-tags nodev,bench) or "dev".
		Build string `json:"build"`
	}
	rep.Build = buildKind
	if c.URL == "" && buildKind != "production" {
		log.Warn("bench ingest: this binary is the dev build, and the server it starts is too (its memory includes the embedded Temporal); build with -tags nodev,bench for the production figures")
	}
	rep.RateCap = bench.RateCap(c.Devices, c.Warmup+c.Duration)
	if !*skipCeilings {
		if rep.Ceilings, err = measureCeilings(ctx, cfg, c); err != nil {
			return err
		}
		c.HTTPCeiling = true
		if c.Rate > 0 && *jsonOut {
			log.Info("bench ingest: " + pacedCeilingNote)
		}
	}
	if !*skip {
		// Same duration, warm-up and connections as the ingest run, just
		// before it, so the ratio compares like with like on a noisy machine.
		b, err := bench.Baseline(ctx, bench.BaselineConfig{DatabaseURL: cfg.DatabaseURL, Concurrency: c.Concurrency, Duration: c.Duration, Warmup: c.Warmup})
		if err != nil {
			return err
		}
		rep.Baseline = &b
	}
	warnRateCap(log, rep.RateCap, c, rep.Ceilings)
	if rep.Ingest, err = bench.Ingest(ctx, c); err != nil {
		return err
	}
	if rep.Baseline != nil && rep.Baseline.TPS > 0 {
		rep.Ratio = rep.Ingest.CreatedRPS / rep.Baseline.TPS
	}
	if rep.Ceilings != nil && rep.Ingest.HTTPCeiling != nil {
		rep.Ceilings.HTTP = *rep.Ingest.HTTPCeiling
		rep.HTTPRatio, rep.DatabaseRatio = rep.Ceilings.Against(rep.Ingest)
	}
	if *jsonOut {
		err = json.NewEncoder(out).Encode(rep)
	} else {
		if rep.Baseline != nil {
			rep.Baseline.Print(out)
		}
		rep.Ingest.Print(out)
		if c.URL == "" {
			fmt.Fprintf(out, "  server: furrow serve of the %s build\n", rep.Build)
		}
		fmt.Fprintf(out, "  rate limit: %d devices may be accepted at most %.0f/s over this run\n", c.Devices, rep.RateCap)
		if rep.Baseline != nil {
			fmt.Fprintf(out, "ratio: %.2f of the baseline (201/s over baseline tx/s)\n", rep.Ratio)
		}
		if rep.Ceilings != nil {
			rep.Ceilings.Print(out)
			rep.Ceilings.PrintAgainst(out, rep.Ingest)
			if c.Rate > 0 {
				fmt.Fprintf(out, "  note: %s\n", pacedCeilingNote)
			}
		}
	}
	return errors.Join(err, rep.Ingest.Check())
}

// pacedCeilingNote says what the HTTP ceiling ratio of a paced run is.
const pacedCeilingNote = "the ingest was paced at --rate and the ceilings ran at full speed: the ceiling ratios are the asked rate's share of each ceiling, bounded by --rate, not how close the server came to them (use --skip-ceilings with --rate, or no --rate for the ratio)"

func benchDelivery(ctx context.Context, load settings, fs *flag.FlagSet, args []string, out io.Writer, log *slog.Logger, jsonOut *bool) error {
	c := bench.DeliveryConfig{Environ: os.Environ(), Logger: log}
	fs.StringVar(&c.URL, "url", "", "server to measure, or comma-separated API replicas of one deployment (its database is FURROW_DATABASE_URL; it must trust --cert-dir/receiver.pem); empty starts `furrow dev`")
	fs.StringVar(&c.RedisURL, "redis", "", "Redis of the started server; default FURROW_REDIS_URL")
	fs.StringVar(&c.CertDir, "cert-dir", "", "directory keeping the receiver's certificate (receiver.pem); default a temporary one")
	fs.Float64Var(&c.Rate, "rate", 50, "readings per second")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "how long to post")
	fs.DurationVar(&c.Drain, "drain", time.Minute, "how long to wait afterwards for the last deliveries")
	fs.IntVar(&c.Devices, "devices", 0, "devices; default one per reading per second, so none nears its rate limit")
	fs.IntVar(&c.Concurrency, "concurrency", 32, "connections")
	fs.IntVar(&c.Pid, "pid", 0, "process id of the server under test, to report its memory")
	fs.StringVar(&c.TemporalAddress, "temporal", "", "with --url: the Temporal frontend (host:port) the server uses, to measure the bare engine on it too; default FURROW_TEMPORAL_ADDRESS")
	fs.StringVar(&c.Namespace, "namespace", "", "with --url: the Temporal namespace of the bare-engine run; default FURROW_TEMPORAL_NAMESPACE (without --url: the started furrow dev's, \"default\")")
	fs.BoolVar(&c.NoEngine, "no-engine", false, "do not measure the bare engine")
	fs.IntVar(&c.Turns, "turns", 2, "turns each of the bare engine and Furrow takes, alternately, each of --duration divided by --turns")
	if err := parse(fs, args); err != nil {
		return err
	}
	if c.Rate <= 0 || c.Duration <= 0 || c.Concurrency < 1 || c.Devices < 0 || c.Turns < 1 {
		return fmt.Errorf("bench delivery: --rate, --duration, --concurrency and --turns must be positive: %w", errUsage)
	}
	if c.URL != "" && c.CertDir == "" {
		return fmt.Errorf("bench delivery: --url needs --cert-dir, whose receiver.pem the server trusts: %w", errUsage)
	}
	if c.URL == "" && buildKind == "production" {
		return errors.New("bench delivery: without --url it starts `furrow dev` from this binary, whose production build (-tags nodev) has no embedded Temporal: give --url (with --temporal), or use a build without nodev")
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	c.DatabaseURL = cfg.DatabaseURL
	unlessGiven(fs, "redis", &c.RedisURL, cfg.RedisURL)
	unlessGiven(fs, "temporal", &c.TemporalAddress, cfg.TemporalAddress)
	unlessGiven(fs, "namespace", &c.Namespace, cfg.TemporalNamespace)
	if c.URL == "" {
		// The started `furrow dev` runs its own Temporal, with its one
		// namespace, "default".
		if flagGiven(fs, "namespace") {
			log.Warn("bench delivery: --namespace names a running server's namespace; without --url the bare engine runs in the started furrow dev's, \"default\"")
		}
		c.TemporalAddress, c.Namespace = "", ""
	}
	if c.Devices == 0 {
		c.Devices = max(10, int(c.Rate+0.5))
	}
	if c.Binary, err = os.Executable(); err != nil {
		return err
	}
	if c.URL != "" && c.TemporalAddress == "" && !c.NoEngine {
		log.Warn("no --temporal (or FURROW_TEMPORAL_ADDRESS): the bare engine is not measured")
	}
	if c.URL != "" {
		// A log line, so that --json leaves stdout to the report alone.
		log.Info("the server must run with FURROW_WEBHOOK_ALLOW_PRIVATE=true and FURROW_WEBHOOK_CA_FILE naming this file",
			"file", filepath.Join(c.CertDir, "receiver.pem"))
	}
	r, err := bench.Delivery(ctx, c)
	if err != nil {
		return err
	}
	if *jsonOut {
		err = json.NewEncoder(out).Encode(r)
	} else {
		r.Print(out)
	}
	return errors.Join(err, r.Check())
}

// warnRateCap warns when the rate limit could cap the run: when rateCap,
// the most 201s per second the limit lets the fleet get on average over
// the warm-up and the run (bench.RateCap), is below the rate the run could
// otherwise reach: the offered --rate, or at full speed the measured
// database ceiling, or 100,000/s assumed when it is not measured.
func warnRateCap(log *slog.Logger, rateCap float64, c bench.IngestConfig, ceilings *bench.Ceilings) {
	reach, against := 100000.0, "100,000/s assumed at full speed (ceilings not measured)"
	switch {
	case c.Rate > 0:
		reach, against = c.Rate, "the offered --rate"
	case ceilings != nil:
		reach, against = ceilings.Database.PerSec, "the measured database ceiling"
	}
	if rateCap < reach {
		log.Warn("bench ingest: over the warm-up and the run, the rate limit lets this fleet get fewer 201s a second on average than the run could reach; raise --devices",
			"devices", c.Devices, "rate_cap_per_s", int(rateCap), "reachable_per_s", int(reach), "reachable", against)
	}
}

// benchNotes is what `furrow bench <tool> --help` says of each tool
// before its flags: the bounds of its runs and what it leaves behind.
var benchNotes = map[string]string{
	"baseline": dbNote,
	"ingest": pacedNote + warmupNote + "\n" + dbNote + "\n" + `With --url, the run's user (its token valid), farm and devices (their
keys valid) stay on the server: the API has no route to delete them, so
the run names them at its end. Without --url it leaves nothing.
`,
	"delivery": pacedNote + "\n" + dbNote + "\n" + `With --url, the run's webhook is deleted at its end; its user (token
valid), farm and devices (keys valid) stay on the server, which has no
route to delete them, and the run names them. Without --url the bare
engine runs in the started furrow dev's namespace "default", whatever
--namespace says, and the run leaves nothing.
`,
}

// pacedNote, warmupNote and dbNote are the bounds of the tools' runs.
var (
	pacedNote = fmt.Sprintf(`With a rate, requests go out on an open-loop schedule and their latency
runs from each one's scheduled time, so that a stalled server's queue
counts; the rate offered and how late the tool sent are printed, with a
warning when it offered over %.0f%% less than asked. A run hands out no
request later than %s after its end; a request unanswered by then is
given up, and one never sent fails the run.
`, 100*bench.OfferedShortfall, bench.PaceGrace)
	warmupNote = fmt.Sprintf(`The warm-up, which goes on until every device has posted once, hands
out none later than %s after --warmup ends or, with a rate, after the
last device's turn if that is later.
`, bench.PaceGrace)
	dbNote = fmt.Sprintf(`Each of the tool's own database statements and transactions (a scratch
database's creation and migration included) is given up after %s.
`, bench.DBTimeout)
)

// printBenchHelp prints the help of `furrow bench tool`.
func printBenchHelp(fs *flag.FlagSet, tool string) {
	fmt.Fprintf(fs.Output(), "usage: furrow bench %s [flags]\n\n%s\nflags:\n", tool, benchNotes[tool])
	fs.PrintDefaults()
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// unlessGiven sets *dst to v unless the command line set the flag name:
// flags defaulting to a setting get it after parsing, since settings are
// read only then.
func unlessGiven(fs *flag.FlagSet, name string, dst *string, v string) {
	if !flagGiven(fs, name) {
		*dst = v
	}
}

// parse parses flags; a bad flag is a usage error.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return errHelp
	} else if err != nil {
		return fmt.Errorf("bench: %w", errUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench: unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	return nil
}

// measureCeilings measures the machine's database ceiling with the ingest
// run's duration, just before it; the HTTP ceiling is measured in turns
// with the ingest (bench.IngestConfig.HTTPCeiling).
func measureCeilings(ctx context.Context, cfg Config, c bench.IngestConfig) (*bench.Ceilings, error) {
	var out bench.Ceilings
	var err error
	// Four connections of disjoint devices: more writers than cores keep
	// PostgreSQL busy while each waits for its commit's WAL flush.
	if out.Database, err = bench.DatabaseCeiling(ctx, cfg.DatabaseURL, 4, c.Duration); err != nil {
		return nil, err
	}
	return &out, nil
}
