// Package ratelimit holds the exact sliding-window rate limiters of the
// reading endpoint: an in-process one for a single instance, a Redis one
// shared by every instance, and a fail-open wrapper for the Redis one. The
// limit they are given is furrow.RateLimit per furrow.RateWindow.
package ratelimit
