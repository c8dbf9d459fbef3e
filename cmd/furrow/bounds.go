package main

import (
	"fmt"
	"time"
)

// Bounds are the time limits that keep a request from waiting on a dead
// network: a silent PostgreSQL or Redis, or a client that sends slowly,
// costs at most these. docs/operating/configuration.md lists them.
type Bounds struct {
	// ReadHeader, Read, Write and Idle are the API server's timeouts: to
	// read a request's headers, to read the whole request with its body,
	// to write the answer, and to keep an idle keep-alive connection.
	ReadHeader, Read, Write, Idle time.Duration
	// Request is the deadline of each API request's work (every store and
	// Redis call); past it the request answers 500 internal_error with
	// retry-after.
	Request time.Duration
	// Connect bounds opening a PostgreSQL or Redis connection; DeadConn is
	// how long a silent peer keeps a connection before it is dropped.
	Connect, DeadConn time.Duration
	// Limiter is the rate limiter's own bound: past it the request is let
	// through (fail open). LimiterBreaker is how long a failure is
	// remembered, during which Redis is not asked at all.
	Limiter, LimiterBreaker time.Duration
}

// loadBounds reads the FURROW_* time limits; defaults are those an
// operator would pick for devices on slow links.
func loadBounds(getenv func(string) string) (Bounds, error) {
	var b Bounds
	for _, d := range []struct {
		name string
		def  string
		dst  *time.Duration
	}{
		{"FURROW_HTTP_READ_HEADER_TIMEOUT", "5s", &b.ReadHeader},
		{"FURROW_HTTP_READ_TIMEOUT", "15s", &b.Read},
		{"FURROW_HTTP_WRITE_TIMEOUT", "15s", &b.Write},
		{"FURROW_HTTP_IDLE_TIMEOUT", "60s", &b.Idle},
		{"FURROW_REQUEST_TIMEOUT", "5s", &b.Request},
		{"FURROW_CONNECT_TIMEOUT", "3s", &b.Connect},
		{"FURROW_DEAD_CONN_TIMEOUT", "10s", &b.DeadConn},
		{"FURROW_RATELIMIT_TIMEOUT", "250ms", &b.Limiter},
		{"FURROW_RATELIMIT_BREAKER", "5s", &b.LimiterBreaker},
	} {
		v, err := parsePositive(or(getenv(d.name), d.def))
		if err != nil {
			return b, fmt.Errorf("%s: %w", d.name, err)
		}
		*d.dst = v
	}
	// The answer to a request that ran out of time must still be written.
	if b.Request >= b.Write {
		return b, fmt.Errorf("FURROW_REQUEST_TIMEOUT (%s) must be shorter than FURROW_HTTP_WRITE_TIMEOUT (%s)", b.Request, b.Write)
	}
	if b.Limiter >= b.Request {
		return b, fmt.Errorf("FURROW_RATELIMIT_TIMEOUT (%s) must be shorter than FURROW_REQUEST_TIMEOUT (%s)", b.Limiter, b.Request)
	}
	return b, nil
}
