package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"time"
)

// The speed probe is the best of speedReps timings of speedWork JSON round
// trips of a reading-sized value.
const (
	speedReps = 7
	speedWork = 2000
)

// Speed is what the speed probe measured, in microseconds: before the
// engine's first turn (0 without one), before Furrow's first turn, and
// after the last turn's drain; and the median of the samples taken during
// the engine's turns and during Furrow's (see speedSampler). More is
// slower.
type Speed struct {
	EngineStart  float64 `json:"engine_start,omitempty"`
	Start        float64 `json:"start"`
	End          float64 `json:"end"`
	EngineDuring float64 `json:"engine_during,omitempty"`
	During       float64 `json:"during,omitempty"`
}

// probeSpeed times a fixed piece of work, the JSON encoding and decoding of
// a reading-sized value, on the CPU clock of the thread that runs it, and
// returns the best of speedReps timings in microseconds: how fast one core
// runs, time spent waiting for it not counted. The machines these figures
// come from are virtual, and their speed can move by a third within
// minutes, or halve for seconds at a time; a probe before each part of a
// run and after it, with the samples taken during each (speedSampler),
// tells such a swing from a change in what is measured.
func probeSpeed() float64 {
	runtime.GC() // so that the bench's own garbage is not collected during the probe
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Duration(1<<63 - 1)
	for range speedReps {
		best = min(best, speedWorkTime(speedWork))
	}
	return float64(best.Microseconds())
}

// speedWorkTime times n of the probe's JSON round trips on the calling
// thread's CPU clock; the caller locks the goroutine to its thread.
func speedWorkTime(n int) time.Duration {
	type reading struct {
		DeviceID string  `json:"device_id"`
		MetricID int32   `json:"metric_id"`
		Value    string  `json:"value"`
		Ts       int64   `json:"timestamp"`
		Farm     string  `json:"farm_id"`
		Score    float64 `json:"score"`
	}
	in := reading{"be02614a-6f1e-4c8e-9b1d-2f1f5b0c7a11", 7, "21.5", 1795789176000, "2709efd7-0c5e-4d55-8d1e-6a3b1f0e9c42", 0.5}
	began := threadTime()
	for range n {
		b, _ := json.Marshal(in)
		var out reading
		_ = json.Unmarshal(b, &out)
	}
	return threadTime() - began
}

// speedSample is one timing of a quarter of the probe's work, scaled to the
// probe's units: small enough to take every second of a run (a few
// milliseconds of one core's time), in the median of many.
const speedSample = speedWork / 4

// speedSampler samples the machine's speed while a run goes on: at once,
// then every interval. Some of these machines switch between two speeds,
// one about twice the other, within seconds, so probes before and after a
// run cannot say at which speed it ran.
type speedSampler struct {
	stop chan struct{}
	done chan []time.Duration
}

// startSpeedSampler starts sampling every interval until samples or median
// is called.
func startSpeedSampler(interval time.Duration) *speedSampler {
	s := &speedSampler{stop: make(chan struct{}), done: make(chan []time.Duration, 1)}
	go s.run(interval)
	return s
}

func (s *speedSampler) run(interval time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var samples []time.Duration
	for {
		samples = append(samples, speedWorkTime(speedSample)*speedWork/speedSample)
		select {
		case <-s.stop:
			s.done <- samples
			return
		case <-tick.C:
		}
	}
}

// samples stops the sampling and returns its samples, each scaled to the
// probe's whole work.
func (s *speedSampler) samples() []time.Duration {
	close(s.stop)
	return <-s.done
}

// medianUS returns the median of samples (Summarize's p50) in µs, 0 when
// there are none; it sorts samples.
func medianUS(samples []time.Duration) float64 {
	return float64(Summarize(samples).P50.Microseconds())
}

// speedInterval is how often a run of either tool samples the machine's
// speed.
const speedInterval = time.Second

// Print writes s for people, and says when the engine's run and Furrow's
// ran at speeds a tenth or more apart.
func (s Speed) Print(w io.Writer) {
	fmt.Fprintf(w, "machine speed (a fixed piece of work, best of %d, more is slower):", speedReps)
	if s.EngineStart > 0 {
		fmt.Fprintf(w, " %.0f µs before the engine's first turn,", s.EngineStart)
	}
	fmt.Fprintf(w, " %.0f µs before Furrow's, %.0f µs after the last", s.Start, s.End)
	if s.During > 0 {
		fmt.Fprint(w, "; median of a sample a second during")
		if s.EngineDuring > 0 {
			fmt.Fprintf(w, " the engine's turns %.0f µs,", s.EngineDuring)
		}
		fmt.Fprintf(w, " Furrow's %.0f µs", s.During)
	}
	fmt.Fprintln(w)
	printSpeedGap(w, s.During, s.EngineDuring, "Furrow's turns", "the engine's", "their CPU per delivery compares")
}

// printSpeedGap warns when ours (the speed sampled during what) and theirs
// (during than) are a tenth or more apart, since the figures compared then
// come from two machine speeds. A 0 means not sampled: nothing to say.
func printSpeedGap(w io.Writer, ours, theirs float64, what, than, compared string) {
	if ours <= 0 || theirs <= 0 {
		return
	}
	d, way := ours/theirs-1, "longer"
	if d < 0 {
		way = "less time"
	}
	if math.Abs(d) >= 0.1 {
		fmt.Fprintf(w, "  the probe took %.0f%% %s during %s than during %s: %s two machine speeds\n", 100*math.Abs(d), way, what, than, compared)
	}
}
