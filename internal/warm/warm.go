// Package warm runs functions on goroutines kept between them, so that a
// deep call chain grows a goroutine's stack once rather than on every call.
//
// A fresh goroutine starts with a small stack and grows it by copying it
// whole, twice or more, before a workflow start (the SDK's interceptors,
// gRPC, the visit of every payload) or a Redis script call is deep enough.
// On a serve delivering 50 events a second, such growth in the
// dispatcher's starts and the rate limiter's calls took 2.6 to 5.7% of its
// CPU (BENCHMARKS.md). A goroutine that lives on keeps its grown stack for
// the next call.
package warm

import (
	"sync/atomic"
	"time"
)

// idle is how long a goroutine waits for its next function before it
// exits: long enough to outlast the gaps of a steady stream of calls.
const idle = 5 * time.Second

// Pool runs functions on goroutines it keeps while calls come. It holds
// as many goroutines as once ran functions at the same time, which its
// callers bound; each exits after idle without one. The zero Pool is not
// usable: call New.
type Pool struct {
	work    chan func()  // unbuffered: a send succeeds only to an idle goroutine
	started atomic.Int64 // goroutines started, which the tests read
}

// New returns an empty pool.
func New() *Pool {
	return &Pool{work: make(chan func())}
}

// Go runs f on an idle goroutine of p, or on a new one if none is idle,
// and returns at once.
func (p *Pool) Go(f func()) {
	select {
	case p.work <- f:
	default:
		p.started.Add(1)
		go p.loop(f)
	}
}

// loop runs f, then whatever functions come until none has come for idle.
func (p *Pool) loop(f func()) {
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		f()
		t.Reset(idle)
		select {
		case f = <-p.work:
		case <-t.C:
			return
		}
	}
}
