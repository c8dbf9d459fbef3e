package furrow

import (
	"fmt"
	"math"
)

// ValidateMaxPerSecond checks a webhook's delivery rate: nil is unlimited;
// otherwise a positive number of attempts a second, at most
// MaxPerSecondBound.
func ValidateMaxPerSecond(v *float64) error {
	if v == nil {
		return nil
	}
	if math.IsNaN(*v) || *v <= 0 || *v > MaxPerSecondBound {
		return Errorf(EINVALID, "The field max_per_second must be null or a number above 0 and at most %d.", MaxPerSecondBound)
	}
	return nil
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
