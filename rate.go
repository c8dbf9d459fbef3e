package furrow

import (
	"fmt"
	"math"
	"time"
)

// ValidateMaxPerSecond checks a webhook's delivery rate: nil is unlimited;
// otherwise a number of attempts a second from MinPerSecondBound to
// MaxPerSecondBound.
func ValidateMaxPerSecond(v *float64) error {
	if v == nil {
		return nil
	}
	if math.IsNaN(*v) || *v < MinPerSecondBound || *v > MaxPerSecondBound {
		return Errorf(EINVALID, "The field max_per_second must be null or a number from %g to %d.", MinPerSecondBound, MaxPerSecondBound)
	}
	return nil
}

// PaceInterval is the time between two attempts at perSecond, at least
// 1 µs. A rate below MinPerSecondBound (stored before that was a bound)
// is paced at it, so that the interval never overflows.
func PaceInterval(perSecond float64) time.Duration {
	return max(time.Duration(math.Round(float64(time.Second)/max(perSecond, MinPerSecondBound))), time.Microsecond)
}

// RateText says a rate of attempts a second in words, as the delivery
// workflow's details show it ("5/s", "0.5/s").
func RateText(perSecond float64) string {
	return fmt.Sprintf("%g/s", perSecond)
}

// WebhookPatch is a change of a webhook's settings by its owner: a nil URL
// or EventTypes is left as it is, and MaxPerSecond is written only when
// SetMaxPerSecond is true (nil then means unlimited).
type WebhookPatch struct {
	URL             *string
	EventTypes      []string
	SetMaxPerSecond bool
	MaxPerSecond    *float64
}
