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
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

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

// `furrow worker` with a namespace its Temporal does not have ends at start
// with exit 1 and an error naming the setting.
func TestWorkerStopsOnAnUnknownNamespace(t *testing.T) {
	srv := testtemporal.New(t)
	e, _ := serveEnv(t, srv.FrontendAddr(), map[string]string{"FURROW_TEMPORAL_NAMESPACE": "no-such-namespace"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, []string{"worker"}, e, &bytes.Buffer{}, &testenv.Buffer{})
	var nf *serviceerror.NamespaceNotFound
	if code := report(err, &bytes.Buffer{}); code != 1 || !errors.As(err, &nf) || !strings.Contains(err.Error(), `FURROW_TEMPORAL_NAMESPACE is "no-such-namespace"`) {
		t.Errorf("furrow worker ended with %v (exit %d); want exit 1 with the namespace's error naming the setting", err, code)
	}
}

// `furrow serve` with a namespace its Temporal does not have yet stays
// ready (its readings wait in the outbox), says at each try of its worker
// that the namespace is missing, naming the setting, and starts the worker
// once the namespace is registered: by a setup job running beside it, say.
func TestServeWaitsForItsNamespace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve for seconds")
	}
	srv := testtemporal.New(t)
	e, api := serveEnv(t, srv.FrontendAddr(), map[string]string{"FURROW_TEMPORAL_NAMESPACE": "late"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &testenv.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, e, &bytes.Buffer{}, stderr) }()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		waitRunning(t, "furrow serve", what, 45*time.Second, done, stderr, ok)
	}
	waitFor("ready, telling of the namespace", func() bool {
		return answers(t, "http://"+api+"/readyz", http.StatusOK) &&
			strings.Contains(stderr.String(), `FURROW_TEMPORAL_NAMESPACE is \"late\"`)
	})
	nc, err := client.NewNamespaceClient(client.Options{HostPort: srv.FrontendAddr()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: "late", WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	waitFor("its worker started", func() bool { return strings.Contains(stderr.String(), "worker started") })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("furrow serve stopped with %v", err)
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
	waitRunning(t, "furrow serve", "ready", 30*time.Second, done, stderr, func() bool {
		return answers(t, "http://"+api+"/readyz", http.StatusOK)
	})
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
