//go:build !nodev

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/furrowhq/furrow/internal/loopback"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/telemetry"
	"github.com/furrowhq/furrow/workflows"
)

// TestOneTraceFromPostToDeliveryAttempt runs `furrow dev` in process with
// tracing into an in-memory exporter, posts one reading and checks that
// the POST, the store, the workflow start made by the dispatcher, the
// workflow and the delivery attempt are spans of one trace.
func TestOneTraceFromPostToDeliveryAttempt(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := telemetry.NewTracing(exp, false)
	if err != nil {
		t.Fatal(err)
	}
	obs := &observability{}
	if err := obs.withTracing(tr); err != nil {
		t.Fatal(err)
	}
	delivered := make(chan string, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusOK)
		delivered <- string(b)
	}))
	defer rcv.Close()
	api := freePort(t)
	cfg, err := loadConfig(env(map[string]string{
		"FURROW_DATABASE_URL":          testenv.NewDatabase(t, schema),
		"FURROW_HTTP_ADDR":             api,
		"FURROW_DEV_TEMPORAL_ADDR":     freePort(t),
		"FURROW_DEV_UI_ADDR":           freePort(t),
		"FURROW_DEV_DATA_DIR":          t.TempDir(),
		"FURROW_WEBHOOK_ALLOW_PRIVATE": "true",
		"FURROW_METRICS_ADDR":          "off",
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &testenv.Buffer{}
	done := make(chan error, 1)
	go func() { done <- runDev(ctx, cfg, obs, slog.New(slog.DiscardHandler), stdout) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("furrow dev: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("furrow dev did not stop")
		}
	}()
	base := "http://" + api
	demo := waitDemo(t, stdout, done)
	post(t, base+"/api/farms/"+demo["farm"]+"/webhooks", demo["user token"], map[string]any{"url": rcv.URL}, 201)
	post(t, base+"/api/metric-values", demo["device key"], map[string]any{"device_id": demo["device"], "metric_id": 7, "value": 1.5}, 201)
	select {
	case <-delivered:
	case <-time.After(60 * time.Second):
		t.Fatal("no delivery within 60 s")
	}

	var postSpan, attempt bool
	deadline := time.Now().Add(30 * time.Second)
	var names map[string]bool
	for time.Now().Before(deadline) {
		spans := exp.GetSpans()
		var root *tracetest.SpanStub
		for i := range spans {
			if spans[i].Name == "POST /api/metric-values" {
				root = &spans[i]
			}
		}
		names = map[string]bool{}
		if root != nil {
			postSpan = true
			for _, s := range spans {
				if s.SpanContext.TraceID() == root.SpanContext.TraceID() {
					names[s.Name] = true
				}
			}
		}
		attempt = names["RunActivity:Deliver"]
		if attempt {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !postSpan {
		t.Fatalf("no span for the POST; spans: %v", spanNames(exp.GetSpans()))
	}
	for _, want := range []string{
		"POST /api/metric-values", "store.CreateReading",
		"StartWorkflow:" + workflows.DeliveryWorkflowName, "RunWorkflow:" + workflows.DeliveryWorkflowName, "RunActivity:Deliver",
	} {
		if !names[want] {
			t.Errorf("the reading's trace lacks %q; it holds %v; all spans: %v", want, names, spanNames(exp.GetSpans()))
		}
	}
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+"@"+s.SpanContext.TraceID().String()[:8])
	}
	return out
}

// waitDemo waits for the demo data furrow dev prints on an empty database.
func waitDemo(t *testing.T, out *testenv.Buffer, done chan error) map[string]string {
	t.Helper()
	line := regexp.MustCompile(`(?m)^  (owner|user token|farm|device|device key): +(\S+)`)
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("furrow dev stopped: %v", err)
		default:
		}
		if s := out.String(); strings.Contains(s, "Post a reading") {
			m := map[string]string{}
			for _, g := range line.FindAllStringSubmatch(s, -1) {
				m[g[1]] = g[2]
			}
			return m
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("furrow dev printed no demo data within 120 s")
	return nil
}

func post(t *testing.T, url, bearer string, body any, want int) {
	t.Helper()
	b, _ := json.Marshal(body)
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Fatalf("POST %s: %d %s", url, resp.StatusCode, got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("POST %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
