package devserver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/temporal/devserver"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	_ "modernc.org/sqlite" // to read the visibility file
)

const taskQueue = "devserver-test"

var furrowAttributes = map[string]enums.IndexedValueType{
	"FurrowWebhookId":  enums.INDEXED_VALUE_TYPE_KEYWORD,
	"FurrowEventId":    enums.INDEXED_VALUE_TYPE_KEYWORD,
	"FurrowFarmId":     enums.INDEXED_VALUE_TYPE_KEYWORD,
	"FurrowEventType":  enums.INDEXED_VALUE_TYPE_KEYWORD,
	"FurrowOutcome":    enums.INDEXED_VALUE_TYPE_KEYWORD,
	"FurrowLastStatus": enums.INDEXED_VALUE_TYPE_INT,
}

// levelRecorder is a slog.Handler that remembers the lowest level it saw.
type levelRecorder struct {
	mu     sync.Mutex
	lowest slog.Level
	count  int
}

func (h *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *levelRecorder) WithGroup(string) slog.Handler            { return h }
func (h *levelRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == 0 || r.Level < h.lowest {
		h.lowest = r.Level
	}
	h.count++
	return nil
}

func (h *levelRecorder) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count > 0 && h.lowest < slog.LevelWarn {
		t.Errorf("server logged at %s; want only warn and above", h.lowest)
	}
}

// Echo is a trivial workflow.
func Echo(_ workflow.Context, s string) (string, error) { return "echo:" + s, nil }

// Waiter stands for a delivery whose next retry is hours away: it stays open
// until signalled or a day has passed.
func Waiter(ctx workflow.Context) (string, error) {
	var got string
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, "go"), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, &got)
	})
	sel.AddFuture(workflow.NewTimer(ctx, 24*time.Hour), func(workflow.Future) { got = "timer" })
	sel.Select(ctx)
	return got, nil
}

func start(t *testing.T, opts devserver.Options) *devserver.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// connect dials the server and runs a worker for Echo and Waiter.
func connect(t *testing.T, srv *devserver.Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  srv.FrontendAddr(),
		Namespace: "default",
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		t.Fatalf("dial %s: %v", srv.FrontendAddr(), err)
	}
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(Echo)
	w.RegisterWorkflow(Waiter)
	if err := w.Start(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	t.Cleanup(func() { w.Stop(); c.Close() })
	return c
}

func TestStartPersistsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	rec := &levelRecorder{}
	opts := devserver.Options{
		FrontendAddr:     "127.0.0.1:0",
		UIAddr:           "127.0.0.1:0",
		DataDir:          dir,
		SearchAttributes: furrowAttributes,
		Logger:           slog.New(rec),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	srv := start(t, opts)
	c := connect(t, srv)
	checkRetention(ctx, t, c, "default", devserver.DefaultRetention)
	checkSearchAttributes(ctx, t, c, furrowAttributes)
	checkSlotIndexes(ctx, t, c, opts.DataDir, len(furrowAttributes))

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        "delivery/wh-1/ev-1",
		TaskQueue: taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword("FurrowWebhookId").ValueSet("wh-1"),
			temporal.NewSearchAttributeKeyKeyword("FurrowEventType").ValueSet("metric.value"),
		),
	}, Echo, "hi")
	if err != nil {
		t.Fatalf("start Echo: %v", err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil || out != "echo:hi" {
		t.Fatalf("Echo result = %q, %v; want echo:hi", out, err)
	}
	waitListed(ctx, t, c, `FurrowWebhookId = "wh-1" AND FurrowEventType = "metric.value"`, "delivery/wh-1/ev-1")
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "waiter", TaskQueue: taskQueue}, Waiter); err != nil {
		t.Fatalf("start Waiter: %v", err)
	}
	checkUI(ctx, t, srv.UIURL())
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	// Restart on the same file, asking for one more attribute and a longer
	// retention: both must be applied to the existing namespace.
	more := map[string]enums.IndexedValueType{"FurrowExtra": enums.INDEXED_VALUE_TYPE_KEYWORD}
	for k, v := range furrowAttributes {
		more[k] = v
	}
	opts.SearchAttributes, opts.Retention = more, 40*24*time.Hour
	srv = start(t, opts)
	c = connect(t, srv)
	checkRetention(ctx, t, c, "default", 40*24*time.Hour)
	checkSearchAttributes(ctx, t, c, more)
	checkSlotIndexes(ctx, t, c, opts.DataDir, len(more))
	waitListed(ctx, t, c, `FurrowWebhookId = "wh-1"`, "delivery/wh-1/ev-1")
	// The attribute added just now is usable at once (the services refresh
	// their copies for a while after an add), and its slot, whichever the
	// server gave it, has its index (checked above).
	extra, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        "delivery/wh-2/ev-2",
		TaskQueue: taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword("FurrowExtra").ValueSet("x"),
		),
	}, Echo, "extra")
	if err != nil {
		t.Fatalf("start Echo with the new attribute: %v", err)
	}
	if err := extra.Get(ctx, nil); err != nil {
		t.Fatalf("Echo with the new attribute: %v", err)
	}
	waitListed(ctx, t, c, `FurrowExtra = "x"`, "delivery/wh-2/ev-2")
	if err := c.SignalWorkflow(ctx, "waiter", "", "go", "after restart"); err != nil {
		t.Fatalf("signal waiter after restart: %v", err)
	}
	if err := c.GetWorkflow(ctx, "waiter", "").Get(ctx, &out); err != nil || out != "after restart" {
		t.Fatalf("Waiter result = %q, %v; want the signal sent after restart", out, err)
	}
	rec.check(t)
}

func TestStartInMemoryWithoutUI(t *testing.T) {
	srv := start(t, devserver.Options{FrontendAddr: "127.0.0.1:0", DisableUI: true, Namespace: "other"})
	if srv.UIURL() != "" {
		t.Errorf("UIURL() = %q with the UI disabled; want empty", srv.UIURL())
	}
	if !strings.HasPrefix(srv.FrontendAddr(), "127.0.0.1:") || strings.HasSuffix(srv.FrontendAddr(), ":0") {
		t.Errorf("FrontendAddr() = %q; want 127.0.0.1 and the chosen port", srv.FrontendAddr())
	}
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: "other",
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	checkRetention(ctx, t, c, "other", devserver.DefaultRetention)
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	cases := map[string]devserver.Options{
		"no port":         {FrontendAddr: "127.0.0.1"},
		"host name":       {FrontendAddr: "example.com:7233"},
		"bad port":        {FrontendAddr: "127.0.0.1:70000"},
		"bad UI addr":     {FrontendAddr: "127.0.0.1:0", UIAddr: "ui"},
		"short retention": {Retention: time.Hour},
		"untyped attribute": {SearchAttributes: map[string]enums.IndexedValueType{
			"FurrowWebhookId": enums.INDEXED_VALUE_TYPE_UNSPECIFIED}},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			opts.Logger = slog.New(slog.DiscardHandler)
			srv, err := devserver.Start(context.Background(), opts)
			if err == nil {
				_ = srv.Stop()
				t.Fatal("Start succeeded; want an error")
			}
			if code := furrow.ErrorCode(err); code != furrow.EINVALID {
				t.Errorf("code = %q (%v); want %q", code, err, furrow.EINVALID)
			}
		})
	}
}

func TestStartReportsAddressInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = devserver.Start(context.Background(), devserver.Options{
		FrontendAddr: l.Addr().String(), DisableUI: true, Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Start on a busy port: %v; want address in use", err)
	}
}

func checkRetention(ctx context.Context, t *testing.T, c client.Client, ns string, want time.Duration) {
	t.Helper()
	desc, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	if err != nil {
		t.Fatalf("DescribeNamespace: %v", err)
	}
	if got := desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != want {
		t.Errorf("retention = %s; want %s", got, want)
	}
}

func checkSearchAttributes(ctx context.Context, t *testing.T, c client.Client, want map[string]enums.IndexedValueType) {
	t.Helper()
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		t.Fatalf("ListSearchAttributes: %v", err)
	}
	for name, typ := range want {
		if got, ok := resp.GetCustomAttributes()[name]; !ok || got != typ {
			t.Errorf("search attribute %s = %s (present %v); want %s", name, got, ok, typ)
		}
	}
}

// checkSlotIndexes checks that the visibility file in dir indexes exactly
// the keyword and integer slots the namespace maps its n attributes to.
func checkSlotIndexes(ctx context.Context, t *testing.T, c client.Client, dir string, n int) {
	t.Helper()
	desc, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	if err != nil {
		t.Fatalf("DescribeNamespace: %v", err)
	}
	mapped := desc.GetConfig().GetCustomSearchAttributeAliases()
	if len(mapped) != n {
		t.Fatalf("the namespace maps %v, want %d attributes", mapped, n)
	}
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Opaque: filepath.Join(dir, "visibility.db")}).String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'index'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	present := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		present[name] = true
	}
	for kind, slots := range map[string]int{"Keyword": 10, "Int": 3} {
		for i := 1; i <= slots; i++ {
			field := fmt.Sprintf("%s%02d", kind, i)
			index := fmt.Sprintf("by_%s_%02d", strings.ToLower(kind), i)
			if _, used := mapped[field]; used != present[index] {
				t.Errorf("slot %s (%s) is mapped %v but its index %s is present %v", field, mapped[field], used, index, present[index])
			}
		}
	}
}

// waitListed polls visibility, which is written after the workflow closes.
func waitListed(ctx context.Context, t *testing.T, c client.Client, query, wantID string) {
	t.Helper()
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: query})
		if err != nil {
			t.Fatalf("ListWorkflow(%s): %v", query, err)
		}
		for _, e := range resp.GetExecutions() {
			if e.GetExecution().GetWorkflowId() == wantID {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ListWorkflow(%s) never returned %s", query, wantID)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func checkUI(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("UIURL() = %q; want http://127.0.0.1:<port>", url)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET UI: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Errorf("GET %s = %d, %.80q; want 200 and an HTML page", url, resp.StatusCode, body)
	}
}
