package bench

import (
	"testing"
	"time"
)

func TestRateCap(t *testing.T) {
	for _, c := range []struct {
		devices int
		run     time.Duration
		want    float64
	}{
		{10000, 12 * time.Second, 100000}, // 120 each within the one window
		{10000, 60 * time.Second, 20000},  // DefaultIngestDevices over a minute
		{1000, 60 * time.Second, 2000},
		{1000, 90 * time.Second, 1000 * 120 * 2 / 90.0}, // a second window starts
		{10, 0, 0},
	} {
		if got := RateCap(c.devices, c.run); got != c.want {
			t.Errorf("RateCap(%d, %s) = %v, want %v", c.devices, c.run, got, c.want)
		}
	}
}
