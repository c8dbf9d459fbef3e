package bench

import (
	"math"
	"time"

	"github.com/furrowhq/furrow"
)

// DefaultIngestDevices is the fleet of `furrow bench ingest` unless told
// otherwise: the rate limit lets it get 100,000 readings per second on
// average over the default run of 12 s (10 s and the 2 s warm-up), and
// 20,000 over a run of a minute (RateCap): above what one machine serves.
const DefaultIngestDevices = 10000

// RateCap returns the most 201 answers per second that the rate limit
// (furrow.RateLimit per furrow.RateWindow per credential) lets devices give
// over a run of length run, when requests go to each device in turn: each
// device may be accepted RateLimit times in each window the run starts.
func RateCap(devices int, run time.Duration) float64 {
	if run <= 0 {
		return 0
	}
	windows := math.Ceil(run.Seconds() / furrow.RateWindow.Seconds())
	return float64(devices) * furrow.RateLimit * windows / run.Seconds()
}
