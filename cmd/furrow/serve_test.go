//go:build !nodev

package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/internal/testenv/testtemporal"
)

// serveEnv is the environment of a serve on a fresh database with the
// Temporal at temporalAddr, its API on a free port.
func serveEnv(t *testing.T, temporalAddr string, more map[string]string) (func(string) string, string) {
	t.Helper()
	api := freePort(t)
	e := map[string]string{
		"FURROW_DATABASE_URL":     testenv.NewDatabase(t, schema),
		"FURROW_TEMPORAL_ADDRESS": temporalAddr,
		"FURROW_HTTP_ADDR":        api,
		"FURROW_METRICS_ADDR":     "off",
	}
	for k, v := range more {
		e[k] = v
	}
	return env(e), api
}

// `furrow serve` with a namespace its Temporal does not have ends at start
// with exit 1 and an error naming the setting, as `furrow worker` does,
// rather than answering /readyz 200 while its worker retries for ever.
func TestServeAndWorkerStopOnAnUnknownNamespace(t *testing.T) {
	srv := testtemporal.New(t)
	for _, cmd := range []string{"serve", "worker"} {
		e, _ := serveEnv(t, srv.FrontendAddr(), map[string]string{"FURROW_TEMPORAL_NAMESPACE": "no-such-namespace"})
		ctx, cancel := context.WithCancel(context.Background())
		stderr := &testenv.Buffer{}
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{cmd}, e, &bytes.Buffer{}, stderr) }()
		select {
		case err := <-done:
			var nf *serviceerror.NamespaceNotFound
			code := report(err, &bytes.Buffer{})
			if code != 1 || !errors.As(err, &nf) || !strings.Contains(err.Error(), `FURROW_TEMPORAL_NAMESPACE is "no-such-namespace"`) {
				t.Errorf("furrow %s ended with %v (exit %d); want exit 1 with the namespace's error naming the setting", cmd, err, code)
			}
		case <-time.After(30 * time.Second):
			cancel()
			<-done
			t.Errorf("furrow %s still running 30 s after start with an unknown namespace; stderr:\n%s", cmd, stderr)
		}
		cancel()
	}
}

// `furrow serve` starts while Temporal is down: it answers /readyz 200,
// keeps the readings in its outbox, and waits for Temporal, retrying its
// worker, until it is stopped.
func TestServeStartsWhileTemporalIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve for seconds")
	}
	e, api := serveEnv(t, testenv.ClosedAddr(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &testenv.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, e, &bytes.Buffer{}, stderr) }()
	deadline := time.After(30 * time.Second)
	for !answers(t, "http://"+api+"/readyz", http.StatusOK) {
		select {
		case err := <-done:
			t.Fatalf("furrow serve stopped before it was ready: %v; stderr:\n%s", err, stderr)
		case <-deadline:
			t.Fatalf("furrow serve not ready within 30 s; stderr:\n%s", stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	// Past a few tries of the worker: still running, still ready.
	select {
	case err := <-done:
		t.Fatalf("furrow serve stopped while Temporal was down: %v; stderr:\n%s", err, stderr)
	case <-time.After(3 * time.Second):
	}
	if !answers(t, "http://"+api+"/readyz", http.StatusOK) || strings.Count(stderr.String(), "worker cannot start yet; retrying") < 2 {
		t.Errorf("furrow serve not ready, or not retrying its worker, while Temporal was down; stderr:\n%s", stderr)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("furrow serve stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("furrow serve did not stop within 30 s")
	}
}
