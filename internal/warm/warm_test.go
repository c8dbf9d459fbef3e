package warm

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// An idle goroutine takes the next function; one idle for longer than idle
// has exited, and the next function starts another.
func TestPoolKeepsItsGoroutinesWhileCallsCome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New()
		ran := 0
		for range 5 {
			done := make(chan struct{})
			p.Go(func() { ran++; close(done) })
			<-done
			synctest.Wait() // the goroutine waits for the next function
			time.Sleep(idle - 100*time.Millisecond)
		}
		if ran != 5 || p.started.Load() != 1 {
			t.Fatalf("ran %d functions just under idle apart on %d goroutines, want 5 on 1", ran, p.started.Load())
		}
		time.Sleep(idle + 100*time.Millisecond)
		done := make(chan struct{})
		p.Go(func() { close(done) })
		<-done
		if n := p.started.Load(); n != 2 {
			t.Fatalf("%d goroutines started after more than idle without a call, want 2", n)
		}
		time.Sleep(2 * idle) // past idle: the bubble ends with no goroutine left
	})
}

// Functions in flight together run side by side, each on its own
// goroutine, and the goroutines serve the next wave.
func TestPoolRunsFunctionsSideBySide(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New()
		const n = 4
		for range 3 {
			release := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(n)
			for range n {
				p.Go(func() { <-release; wg.Done() })
			}
			synctest.Wait() // all n are running at once
			close(release)
			wg.Wait()
			synctest.Wait()
		}
		if got := p.started.Load(); got != n {
			t.Fatalf("%d goroutines started for three waves of %d functions, want %d", got, n, n)
		}
		time.Sleep(2 * idle) // past idle: the bubble ends with no goroutine left
	})
}
