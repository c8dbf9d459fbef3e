package furrow

import (
	"time"
)

// The rules of rotating a webhook's signing secret. During the overlap the
// previous secret alone signs X-Service-Signature (receivers that know one
// secret keep verifying) and both sign webhook-signature; after it, the new
// secret alone signs both.
const (
	// DefaultSecretOverlap is the overlap of a rotation that names none.
	DefaultSecretOverlap = 24 * time.Hour
	// MaxSecretOverlap bounds the overlap; 0 ends the previous secret at
	// once.
	MaxSecretOverlap = 168 * time.Hour
)

// ParseSecretOverlap reads the overlap asked of a rotation: a Go duration
// text from 0s to MaxSecretOverlap. Anything else is EINVALID, saying what
// is accepted.
func ParseSecretOverlap(text string) (time.Duration, error) {
	d, err := time.ParseDuration(text)
	if err != nil || d < 0 || d > MaxSecretOverlap {
		return 0, Errorf(EINVALID, "The field overlap must be a duration such as \"24h\" or \"90m\", from 0s to %s.", Duration(MaxSecretOverlap))
	}
	return d, nil
}

// SigningSecret is a secret that signs a delivery, with its version.
type SigningSecret struct {
	Version int
	Secret  string
}

// SigningSecrets returns the secrets that sign a delivery sent at at:
// while the overlap of a rotation lasts, the previous secret, which signs
// X-Service-Signature, then the current one; otherwise the current one
// alone. Each attempt decides by its own send time.
func (w Webhook) SigningSecrets(at time.Time) []SigningSecret {
	current := SigningSecret{Version: w.SecretVersion, Secret: w.Secret}
	if w.PreviousSecret == "" || Millis(at) >= w.PreviousSecretUntilMs {
		return []SigningSecret{current}
	}
	return []SigningSecret{{Version: w.SecretVersion - 1, Secret: w.PreviousSecret}, current}
}

// Versions returns the versions of secrets, in order: an attempt's
// SignedWith.
func Versions(secrets []SigningSecret) []int {
	out := make([]int, len(secrets))
	for i, s := range secrets {
		out[i] = s.Version
	}
	return out
}
