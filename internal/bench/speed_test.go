package bench

import (
	"strings"
	"testing"
)

func TestProbeSpeedTimesItsWork(t *testing.T) {
	if us := probeSpeed(); us <= 0 {
		t.Fatalf("probe took %v µs; want the time of its work", us)
	}
}

func TestSpeedPrintsEachProbe(t *testing.T) {
	var out strings.Builder
	Speed{EngineStart: 900, Start: 1200, End: 950}.Print(&out)
	if got := out.String(); !strings.Contains(got, "900 µs before the engine's run, 1200 µs before Furrow's, 950 µs after it") {
		t.Errorf("printed %q", got)
	}
	out.Reset()
	Speed{Start: 1200, End: 950}.Print(&out)
	if got := out.String(); strings.Contains(got, "engine") || !strings.Contains(got, "1200 µs before Furrow's, 950 µs after it") {
		t.Errorf("printed %q for a run without the engine", got)
	}
}
