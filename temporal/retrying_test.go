package temporal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
	}, time.Second, slog.New(slog.NewTextHandler(logs, nil)), func(err error) {
		t.Errorf("a fatal error of a running worker was taken as incurable: %v", err)
	})
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

// failingWorker fails every start with err.
type failingWorker struct {
	worker.Worker // the rest is never called
	err           error
}

func (w *failingWorker) Start() error { return w.err }

// A start that fails for a reason only a change of configuration cures (a
// namespace that does not exist, credentials refused) is handed to
// incurable at each try, and tried again; an unreachable server is tried
// again without it.
func TestRetryingWorkerTellsIncurableStartsAndRetries(t *testing.T) {
	for _, c := range []struct {
		name      string
		err       error
		incurable bool
	}{
		{"unknown namespace", serviceerror.NewNamespaceNotFound("nope"), true},
		{"permission denied", serviceerror.NewPermissionDenied("no", ""), true},
		{"unauthenticated", status.Error(codes.Unauthenticated, "who"), true},
		{"invalid argument", serviceerror.NewInvalidArgument("bad"), true},
		{"unreachable", serviceerror.NewUnavailable("connection refused"), false},
		{"slow", context.DeadlineExceeded, false},
		{"overloaded", serviceerror.NewResourceExhausted(enumspb.RESOURCE_EXHAUSTED_CAUSE_RPS_LIMIT, "busy"), false},
		{"anything else", errors.New("failed to get executable checksum"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var builds atomic.Int32
			given := make(chan error, 10)
			r := StartRetrying(func(func(error)) worker.Worker {
				builds.Add(1)
				return &failingWorker{err: fmt.Errorf("wrapped: %w", c.err)}
			}, 10*time.Millisecond, slog.New(slog.DiscardHandler), func(err error) { given <- err })
			time.Sleep(300 * time.Millisecond) // a few tries at the start's pace
			r.Stop()
			close(given)
			var got []error
			for err := range given {
				got = append(got, err)
			}
			if !c.incurable {
				if len(got) != 0 || builds.Load() < 2 {
					t.Errorf("%d builds, incurable given %v; want retries and nothing given", builds.Load(), got)
				}
				return
			}
			if len(got) < 2 || int32(len(got)) != builds.Load() || !errors.Is(got[0], c.err) {
				t.Errorf("incurable given %v after %d builds; want the start error at every try, and more than one try", got, builds.Load())
			}
		})
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
