package bench

import (
	"encoding/json"
	"slices"
	"time"
)

// Summary describes a set of latencies. Its fields print as milliseconds
// in JSON so that results read the same in text and JSON.
type Summary struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"-"`
	P95   time.Duration `json:"-"`
	P99   time.Duration `json:"-"`
	Max   time.Duration `json:"-"`
}

// Summarize sorts ds in place and returns their percentiles (nearest rank).
func Summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(ds))+0.999999) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return Summary{Count: len(ds), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: ds[len(ds)-1]}
}

// MarshalJSON writes the percentiles as fractional milliseconds.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"count": s.Count, "p50_ms": ms(s.P50), "p95_ms": ms(s.P95), "p99_ms": ms(s.P99), "max_ms": ms(s.Max),
	})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// perSecond is n over elapsed, zero when nothing elapsed.
func perSecond(n int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(n) / elapsed.Seconds()
}
