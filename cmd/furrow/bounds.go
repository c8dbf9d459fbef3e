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

// check says whether the bounds fit together; the configuration's
// durations table reads them.
func (b Bounds) check() error {
	// The answer to a request that ran out of time must still be written.
	if b.Request >= b.Write {
		return fmt.Errorf("FURROW_REQUEST_TIMEOUT (%s) must be shorter than FURROW_HTTP_WRITE_TIMEOUT (%s)", b.Request, b.Write)
	}
	if b.Limiter >= b.Request {
		return fmt.Errorf("FURROW_RATELIMIT_TIMEOUT (%s) must be shorter than FURROW_REQUEST_TIMEOUT (%s)", b.Limiter, b.Request)
	}
	return nil
}
