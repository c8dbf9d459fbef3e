package temporal

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/worker"
)

// fakeWorker starts at once and keeps the OnFatalError it was built with.
type fakeWorker struct {
	worker.Worker // the rest is never called
	onFatal       func(error)

	mu      sync.Mutex
	stopped bool
}

func (w *fakeWorker) Start() error { return nil }

func (w *fakeWorker) Stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

func (w *fakeWorker) isStopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

// A worker the SDK stops on an error it does not retry is stopped and
// replaced by a fresh one, which Stop then stops; the error is logged.
func TestRetryingWorkerReplacesAWorkerStoppedOnAFatalError(t *testing.T) {
	built := make(chan *fakeWorker, 10)
	logs := &bytes.Buffer{} // read after Stop, which waits for the loop
	r := StartRetrying(func(onFatal func(error)) worker.Worker {
		w := &fakeWorker{onFatal: onFatal}
		built <- w
		return w
	}, time.Second, slog.New(slog.NewTextHandler(logs, nil)))
	next := func() *fakeWorker {
		t.Helper()
		select {
		case w := <-built:
			return w
		case <-time.After(5 * time.Second):
			t.Fatal("no worker built within 5 s")
			return nil
		}
	}
	first := next()
	if first.onFatal == nil {
		t.Fatal("the worker was built without an OnFatalError")
	}
	first.onFatal(serviceerror.NewNamespaceNotFound("furrow"))
	second := next()
	if !first.isStopped() {
		t.Error("the worker stopped on a fatal error was not stopped before its replacement")
	}
	if second.isStopped() {
		t.Error("the replacement is stopped")
	}
	r.Stop()
	if !second.isStopped() {
		t.Error("Stop did not stop the replacement")
	}
	if got := logs.String(); !containsAll(got, "level=ERROR", "does not retry", "furrow") {
		t.Errorf("the fatal error was not logged: %q", got)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
