// Package ratelimit holds the exact sliding-window rate limiters of the
// reading endpoint: an in-process one for a single instance, a Redis one
// shared by every instance, and a fail-open wrapper for the Redis one.
package ratelimit

import "time"

// The limit of the reading endpoint: 120 requests per 60 seconds per device credential.
const (
	SpecLimit  = 120
	SpecWindow = 60 * time.Second
)
