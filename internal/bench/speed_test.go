package bench

import (
	"strings"
	"testing"
	"time"
)

func TestProbeSpeedTimesItsWork(t *testing.T) {
	if us := probeSpeed(); us <= 0 {
		t.Fatalf("probe took %v µs; want the time of its work", us)
	}
}

func TestSpeedSamplerSamplesAtOnceAndOnEachTick(t *testing.T) {
	// A sample takes a few milliseconds, tens under the race detector on
	// a slow machine: a second at one a millisecond leaves room for many.
	s := startSpeedSampler(time.Millisecond)
	time.Sleep(time.Second)
	samples := s.samples()
	if len(samples) < 2 {
		t.Fatalf("%d samples in a second at one a millisecond; want the first and those on the ticks", len(samples))
	}
	for _, d := range samples {
		if d <= 0 {
			t.Fatalf("samples %v; want each the time of its work", samples)
		}
	}
	// Even a sampler stopped at once has its first sample.
	if us := medianUS(startSpeedSampler(time.Hour).samples()); us <= 0 {
		t.Errorf("median of a sampler stopped at once = %v; want its first sample", us)
	}
}

func TestSpeedPrintsEachProbe(t *testing.T) {
	var out strings.Builder
	Speed{EngineStart: 900, Start: 1200, End: 950}.Print(&out)
	if got := out.String(); !strings.Contains(got, "900 µs before the engine's first turn, 1200 µs before Furrow's, 950 µs after the last\n") {
		t.Errorf("printed %q", got)
	}
	out.Reset()
	Speed{Start: 1200, End: 950}.Print(&out)
	if got := out.String(); strings.Contains(got, "engine") || !strings.Contains(got, "1200 µs before Furrow's, 950 µs after the last") {
		t.Errorf("printed %q for a run without the engine", got)
	}
}

func TestSpeedPrintsTheRunsMediansAndWarnsWhenTheyDiffer(t *testing.T) {
	var out strings.Builder
	Speed{EngineStart: 900, Start: 950, End: 950, EngineDuring: 1000, During: 1050}.Print(&out)
	got := out.String()
	if !strings.Contains(got, "during the engine's turns 1000 µs, Furrow's 1050 µs") {
		t.Errorf("printed %q; want both runs' medians", got)
	}
	if strings.Contains(got, "the probe took") {
		t.Errorf("printed %q; want no warning for medians 5%% apart", got)
	}
	for _, c := range []struct {
		s    Speed
		want string
	}{
		{Speed{EngineDuring: 6000, During: 12000}, "the probe took 100% longer during Furrow's turns"},
		{Speed{EngineDuring: 12000, During: 6000}, "the probe took 50% less time during Furrow's turns"},
	} {
		out.Reset()
		c.s.Print(&out)
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("printed %q; want %q", out.String(), c.want)
		}
	}
}

func TestIngestPrintsTheSpeedOfEachSide(t *testing.T) {
	var out strings.Builder
	r := IngestResult{CreatedRPS: 5000, SpeedUS: 12000, Phase: Phase{Status: map[string]int64{}}}
	r.Print(&out)
	c := Ceilings{HTTP: CeilingResult{PerSec: 20000, SpeedUS: 6000}, Database: CeilingResult{PerSec: 40000}}
	c.PrintAgainst(&out, r)
	got := out.String()
	for _, want := range []string{
		"machine speed (median of a sample a second, more is slower): 12000 µs\n",
		"machine speed during the HTTP ceiling: 6000 µs\n",
		"the probe took 100% longer during the ingest than during the HTTP ceiling: the ratio compares two machine speeds",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("printed %q; want %q", got, want)
		}
	}
	out.Reset()
	r.SpeedUS, c.HTTP.SpeedUS = 0, 0
	r.Print(&out)
	c.PrintAgainst(&out, r)
	if strings.Contains(out.String(), "speed") || strings.Contains(out.String(), "probe") {
		t.Errorf("printed %q for a run without samples", out.String())
	}
}
