package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"time"
)

// The speed probe is the best of speedReps timings of speedWork JSON round
// trips of a reading-sized value.
const (
	speedReps = 7
	speedWork = 2000
)

// Speed is what the speed probe measured, in microseconds: at the start of
// the engine's run (0 without one), at the start of Furrow's run, and after
// its drain. More is slower.
type Speed struct {
	EngineStart float64 `json:"engine_start,omitempty"`
	Start       float64 `json:"start"`
	End         float64 `json:"end"`
}

// probeSpeed times a fixed piece of work, the JSON encoding and decoding of
// a reading-sized value, on the CPU clock of the thread that runs it, and
// returns the best of speedReps timings in microseconds: how fast one core
// runs, time spent waiting for it not counted (a busy sibling core still
// slows it, through the caches they share). The machines these
// figures come from are virtual, and their speed can move by a third
// within minutes; a probe before each part of a run and after it tells
// such a swing from a change in what is measured.
func probeSpeed() float64 {
	type reading struct {
		DeviceID string  `json:"device_id"`
		MetricID int32   `json:"metric_id"`
		Value    string  `json:"value"`
		Ts       int64   `json:"timestamp"`
		Farm     string  `json:"farm_id"`
		Score    float64 `json:"score"`
	}
	in := reading{"be02614a-6f1e-4c8e-9b1d-2f1f5b0c7a11", 7, "21.5", 1795789176000, "2709efd7-0c5e-4d55-8d1e-6a3b1f0e9c42", 0.5}
	runtime.GC() // so that the bench's own garbage is not collected during the probe
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Duration(1<<63 - 1)
	for range speedReps {
		began := threadTime()
		for range speedWork {
			b, _ := json.Marshal(in)
			var out reading
			_ = json.Unmarshal(b, &out)
		}
		best = min(best, threadTime()-began)
	}
	return float64(best.Microseconds())
}

// Print writes s for people.
func (s Speed) Print(w io.Writer) {
	fmt.Fprintf(w, "machine speed (a fixed piece of work, best of %d, more is slower):", speedReps)
	if s.EngineStart > 0 {
		fmt.Fprintf(w, " %.0f µs before the engine's run,", s.EngineStart)
	}
	fmt.Fprintf(w, " %.0f µs before Furrow's, %.0f µs after it\n", s.Start, s.End)
}
