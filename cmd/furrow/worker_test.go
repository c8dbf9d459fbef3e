//go:build !nodev

package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv/testtemporal"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

// stubWorker starts at once and takes no task.
type stubWorker struct {
	worker.Worker // the rest is never called
	stopped       atomic.Bool
}

func (w *stubWorker) Start() error { return nil }
func (w *stubWorker) Stop()        { w.stopped.Store(true) }

// `furrow worker` ends with an error naming the reason (exit 1) when the
// SDK stops its worker on an error it does not retry, rather than running
// on without one while /readyz answers 200. The SDK retries such an error
// for two minutes before it gives up, so a stand-in worker has its
// OnFatalError called; Temporal and PostgreSQL are real.
func TestWorkerExitsOnAFatalWorkerError(t *testing.T) {
	srv := testtemporal.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	built := make(chan func(error), 1)
	w := &stubWorker{}
	buildWorker = func(_ Config, _ *observability, _ *slog.Logger, _ client.Client, _ *store.DB, _ furrow.EventPublisher, onFatal func(error)) (worker.Worker, error) {
		built <- onFatal
		return w, nil
	}
	t.Cleanup(func() { buildWorker = newWorker })
	probes := freePort(t)
	e := env(map[string]string{
		"FURROW_DATABASE_URL":     testenv.NewDatabase(t, schema),
		"FURROW_TEMPORAL_ADDRESS": srv.FrontendAddr(),
		"FURROW_HTTP_ADDR":        probes,
		"FURROW_METRICS_ADDR":     "off",
	})
	stderr := &testenv.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"worker"}, e, &bytes.Buffer{}, stderr) }()
	var onFatal func(error)
	select {
	case onFatal = <-built:
	case err := <-done:
		t.Fatalf("furrow worker stopped before building its worker: %v; stderr:\n%s", err, stderr)
	}
	if onFatal == nil {
		t.Fatal("the worker was built without an OnFatalError")
	}
	// Ready first, as a worker whose polls fail is.
	waitRunning(t, "furrow worker", "ready", time.Minute, done, stderr, func() bool {
		return strings.Contains(stderr.String(), "worker started") && answers(t, "http://"+probes+"/readyz", http.StatusOK)
	})
	onFatal(serviceerror.NewNamespaceNotFound("furrow"))
	select {
	case err := <-done:
		var nf *serviceerror.NamespaceNotFound
		if code := report(err, &bytes.Buffer{}); code != 1 || !errors.As(err, &nf) {
			t.Errorf("furrow worker ended with %v (exit %d); want exit 1 with the fatal error", err, code)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("furrow worker still running 10 s after its worker's fatal error; stderr:\n%s", stderr)
	}
	if !w.stopped.Load() {
		t.Error("the worker was not stopped")
	}
	if !strings.Contains(stderr.String(), `level=ERROR msg="the Temporal worker stopped on an error it does not retry; stopping" err="Namespace furrow is not found`) {
		t.Errorf("no ERROR line with the reason; stderr:\n%s", stderr)
	}
}

// waitRunning polls ok every 50 ms until it holds, failing t when the
// process named name ends first (done) or ok does not hold within.
func waitRunning(t *testing.T, name, what string, within time.Duration, done <-chan error, stderr *testenv.Buffer, ok func() bool) {
	t.Helper()
	deadline := time.After(within)
	for !ok() {
		select {
		case err := <-done:
			t.Fatalf("%s stopped before it was %s: %v; stderr:\n%s", name, what, err, stderr)
		case <-deadline:
			t.Fatalf("%s not %s within %s; stderr:\n%s", name, what, within, stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// answers reports whether url answers status.
func answers(t *testing.T, url string, status int) bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == status
}
