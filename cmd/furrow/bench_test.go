//go:build !nodev || bench

package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/furrowhq/furrow/internal/bench"
)

// The rate-limit warning says what it compared: the limit's average over
// the warm-up and the run against the offered rate, the measured database
// ceiling, or the full speed assumed without one.
func TestWarnRateCapSaysWhatItCompares(t *testing.T) {
	for _, c := range []struct {
		name     string
		cfg      bench.IngestConfig
		ceilings *bench.Ceilings
		want     string // "" for no warning
	}{
		{"a minute at full speed", bench.IngestConfig{Devices: 10000}, nil, "100,000/s assumed"},
		{"the default run", bench.IngestConfig{Devices: 10000, Duration: 10e9, Warmup: 2e9}, nil, ""},
		{"a rate above the cap", bench.IngestConfig{Devices: 1000, Rate: 3333}, nil, "the offered --rate"},
		{"a ceiling above the cap", bench.IngestConfig{Devices: 1000}, &bench.Ceilings{Database: bench.CeilingResult{PerSec: 30000}}, "the measured database ceiling"},
	} {
		run := c.cfg.Duration + c.cfg.Warmup
		if run == 0 {
			run = 60e9
		}
		var logs bytes.Buffer
		warnRateCap(slog.New(slog.NewTextHandler(&logs, nil)), bench.RateCap(c.cfg.Devices, run), c.cfg, c.ceilings)
		got := logs.String()
		if c.want == "" && got != "" || c.want != "" && (!strings.Contains(got, c.want) || !strings.Contains(got, "on average")) {
			t.Errorf("%s: logged %q; want %q", c.name, got, c.want)
		}
	}
}

// A production build has no `furrow dev` to start: without --url the
// delivery tool says so before anything starts.
func TestBenchDeliveryWithoutURLNeedsADevBuild(t *testing.T) {
	if buildKind != "production" {
		t.Skip("SKIPPED in a dev build, which starts furrow dev: `make test` runs it again under -tags nodev,bench")
	}
	err := runBench(t.Context(), func() (Config, error) { return Config{}, nil }, []string{"delivery", "--duration", "1s"}, io.Discard, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "give --url") {
		t.Errorf("bench delivery without --url on a production build: %v", err)
	}
}
