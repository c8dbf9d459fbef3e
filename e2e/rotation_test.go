package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/webhook"
	"github.com/furrowhq/furrow/workflows"
)

// TestSecretRotationNeverLeaks rotates a webhook's secret on `furrow dev`
// (whose dev key ring seals secrets at rest), delivers before and during
// the overlap, checks the signatures the receiver sees, and then looks for
// both secrets, whole and as their base64 key, everywhere they must not
// be: the process's output, the traces it exported, the Temporal history
// of the delivery and webhook workflows and the dev server's files,
// /metrics, every error answer around the route, the attempt log, and
// every row of every table of the database.
func TestSecretRotationNeverLeaks(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server) and a webhook receiver")
	traces := newTraceCollector(t)
	dataDir := t.TempDir()
	e := newDevEnv(t, "FURROW_DEV_DATA_DIR", dataDir,
		"OTEL_EXPORTER_OTLP_ENDPOINT", traces.srv.URL, "OTEL_BSP_SCHEDULE_DELAY", "200")
	hooks := e.f.URL + "/api/farms/" + e.fx.FarmID + "/webhooks/"
	hook := e.createWebhook(t, map[string]any{"url": e.rc.URL()})
	old := hook.Secret
	e.rc.setSecret(old)
	e.postReading(t, 1)
	before := e.rc.next(t, 15*time.Second)
	if !before.Verified {
		t.Fatalf("delivery before the rotation: %+v", before)
	}

	// Errors around the route, each kept for the scan.
	var answers [][]byte
	keep := func(r response, status int, code string) {
		t.Helper()
		expect(t, r, status, code)
		answers = append(answers, r.Body)
	}
	rotatePath := hooks + hook.ID + "/secret/rotate"
	viewerID, viewer := createUser(t, e.db, "viewer-"+uuid.NewString()+"@example.com")
	expect(t, do(t, nil, "POST", e.f.URL+"/api/farms/"+e.fx.FarmID+"/members",
		map[string]string{"user_id": viewerID, "role": "viewer"}, bearer(e.fx.Token)...), 201, "")
	_, outsider := createUser(t, e.db, "outsider-"+uuid.NewString()+"@example.com")
	keep(do(t, nil, "POST", rotatePath, `{"overlap":"169h"}`, bearer(e.fx.Token)...), 400, "bad_request")
	keep(do(t, nil, "POST", rotatePath, `{"overlap":"soon"}`, bearer(e.fx.Token)...), 400, "bad_request")
	keep(do(t, nil, "POST", rotatePath, `{"overlap":86400}`, bearer(e.fx.Token)...), 400, "bad_request")
	keep(do(t, nil, "POST", rotatePath, `{"overlap":`, bearer(e.fx.Token)...), 400, "bad_request")
	keep(do(t, nil, "POST", rotatePath, `{}`, bearer(viewer)...), 403, "forbidden")
	keep(do(t, nil, "POST", rotatePath, `{}`, bearer(outsider)...), 404, "not_found")
	keep(do(t, nil, "POST", rotatePath, `{}`), 401, "unauthorized")
	keep(do(t, nil, "POST", hooks+uuid.NewString()+"/secret/rotate", `{}`, bearer(e.fx.Token)...), 404, "not_found")
	keep(do(t, nil, "GET", rotatePath, nil, bearer(e.fx.Token)...), 405, "bad_request")

	r := do(t, nil, "POST", rotatePath, map[string]string{"overlap": "1h"}, bearer(e.fx.Token)...)
	expect(t, r, 200, "")
	var rotated struct {
		Secret        string
		SecretVersion int   `json:"secret_version"`
		UntilMs       int64 `json:"previous_secret_until_ms"`
	}
	r.JSON(t, &rotated)
	next := rotated.Secret
	if next == old || !strings.HasPrefix(next, "whsec_") || rotated.SecretVersion != 2 || rotated.UntilMs < time.Now().Add(59*time.Minute).UnixMilli() {
		t.Fatalf("rotation answered %s", r.Body)
	}
	if strings.Contains(string(r.Body), strings.TrimPrefix(old, "whsec_")) {
		t.Fatal("the rotation's answer shows the previous secret")
	}

	e.postReading(t, 2)
	during := e.rc.next(t, 15*time.Second)
	checkOverlapSignatures(t, during, old, next)
	waitFor(t, 10*time.Second, func() bool { return len(e.attempts(t, hook.ID)) >= 2 })
	log := do(t, nil, "GET", hooks+hook.ID+"/attempts?limit=100", nil, bearer(e.fx.Token)...)
	expect(t, log, 200, "")
	var rows []struct {
		EventID    string `json:"event_id"`
		SignedWith []int  `json:"signed_with"`
	}
	log.JSON(t, &rows)
	for _, row := range rows {
		want := map[string][]int{before.EventID: {1}, during.EventID: {1, 2}}[row.EventID]
		if !slices.Equal(row.SignedWith, want) {
			t.Errorf("attempt of %s signed_with %v, want %v", row.EventID, row.SignedWith, want)
		}
	}
	// Starting the webhook's own workflow (re-enabling signals it) gives
	// it a history to scan too.
	expect(t, do(t, nil, "POST", hooks+hook.ID+"/enable", nil, bearer(e.fx.Token)...), 200, "")

	secrets := []string{old, strings.TrimPrefix(old, "whsec_"), next, strings.TrimPrefix(next, "whsec_")}
	scan := func(where string, b []byte) {
		t.Helper()
		for i, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the %s secret (%s)", where, []string{"previous", "previous", "new", "new"}[i], []string{"whole", "key"}[i%2])
			}
		}
	}
	scan("the API's error answers", bytes.Join(answers, []byte("\n")))
	scan("the attempt log", log.Body)
	metrics := getBody(t, e.f.MetricsURL)
	if !regexp.MustCompile(`(?m)^furrow_webhook_secret_rotations_total 1$`).Match(metrics) {
		t.Errorf("/metrics does not count the rotation:\n%s", grepLines(metrics, "rotations"))
	}
	scan("/metrics", metrics)
	scanTemporal(t, e, scan, hook.ID, before.EventID, during.EventID)
	scanDatabase(t, e.db, scan)
	scanFiles(t, dataDir, scan)
	scan("the traces", traces.wait(t, "secret/rotate"))
	time.Sleep(500 * time.Millisecond) // the last log lines
	logs := e.f.Stdout() + e.f.Logs()
	if !strings.Contains(logs, "webhook secret rotated") {
		t.Error("the rotation is not logged")
	}
	scan("the process's output", []byte(logs))
}

// checkOverlapSignatures checks a delivery sent during the overlap:
// X-Service-Signature has exactly its two parts and verifies with the
// previous secret only; webhook-signature holds the new secret's signature
// and then the previous one's, and verifies with either secret.
func checkOverlapSignatures(t *testing.T, d delivery, old, next string) {
	t.Helper()
	sig := d.Header.Get(webhook.SignatureHeader)
	if !regexp.MustCompile(`^t=[0-9]+,v1=[0-9a-f]{64}$`).MatchString(sig) {
		t.Errorf("X-Service-Signature %q: want exactly t= and v1=", sig)
	}
	if webhook.Verify(old, sig, d.Body, time.Now()) != nil || webhook.Verify(next, sig, d.Body, time.Now()) == nil {
		t.Errorf("X-Service-Signature does not verify with the previous secret alone")
	}
	values := strings.Split(d.Header.Get(webhook.StandardSignatureHeader), " ")
	if len(values) != 2 {
		t.Fatalf("webhook-signature %q: want two values", values)
	}
	for i, secret := range []string{next, old} {
		h := d.Header.Clone()
		h.Set(webhook.StandardSignatureHeader, values[i])
		if err := standardVerify(secret, h, d.Body); err != nil {
			t.Errorf("webhook-signature value %d does not verify with its secret: %v", i+1, err)
		}
		if err := standardVerify(secret, d.Header, d.Body); err != nil {
			t.Errorf("the whole webhook-signature does not verify with secret %d: %v", i+1, err)
		}
	}
	if webhook.VerifyAny([]string{next, old}, sig, d.Body, time.Now()) != nil || webhook.VerifyStandardAny([]string{next, old}, d.Header, d.Body, time.Now()) != nil {
		t.Error("a receiver holding both secrets refuses the delivery")
	}
}

// withConn runs f on a connection to url, all within timeout.
func withConn(t *testing.T, url string, timeout time.Duration, f func(context.Context, *pgx.Conn) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return f(ctx, c)
}

// scanTemporal scans every event of the histories of both deliveries'
// workflows and of the webhook's workflow, as the wire holds them
// (payloads are JSON inside) and as text.
func scanTemporal(t *testing.T, e *devEnv, scan func(string, []byte), hookID string, events ...string) {
	t.Helper()
	tc, err := client.Dial(client.Options{HostPort: e.temporal, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	id := uuid.MustParse(hookID)
	ids := []string{workflows.WebhookWorkflowID(id)}
	for _, ev := range events {
		ids = append(ids, workflows.DeliveryWorkflowID(id, ev))
	}
	for _, wid := range ids {
		n := 0
		it := tc.GetWorkflowHistory(context.Background(), wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", wid, err)
			}
			raw, err := proto.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			scan("the Temporal history of "+wid, append(raw, ev.String()...))
			n++
		}
		if n == 0 {
			t.Errorf("the history of %s is empty", wid)
		}
	}
}

// scanDatabase scans the text of every row of every table.
func scanDatabase(t *testing.T, url string, scan func(string, []byte)) {
	t.Helper()
	err := withConn(t, url, time.Minute, func(ctx context.Context, c *pgx.Conn) error {
		rows, _ := c.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
			WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`)
		tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgx.Identifier, error) {
			var schema, name string
			return pgx.Identifier{schema, name}, r.Scan(&schema, &name)
		})
		if err != nil {
			return err
		}
		if len(tables) < 5 {
			t.Fatalf("only %d tables found", len(tables))
		}
		for _, table := range tables {
			rows, _ := c.Query(ctx, "SELECT t::text FROM "+table.Sanitize()+" t")
			texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			scan("table "+table.Sanitize(), []byte(strings.Join(texts, "\n")))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// scanFiles scans every file under dir: the dev server's SQLite database
// and the dev key ring.
func scanFiles(t *testing.T, dir string, scan func(string, []byte)) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil {
			scan("the dev data file "+filepath.Base(path), b)
			n++
		}
		return err
	})
	if err != nil || n == 0 {
		t.Fatalf("scanning %s: %d files (%v)", dir, n, err)
	}
}

func getBody(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func grepLines(b []byte, word string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// traceCollector is an OTLP/HTTP endpoint that keeps every export as
// received (protobuf, where strings appear as they are).
type traceCollector struct {
	srv     *httptest.Server
	mu      sync.Mutex
	exports []byte
}

func newTraceCollector(t *testing.T) *traceCollector {
	c := &traceCollector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		c.mu.Lock()
		c.exports = append(append(c.exports, b...), '\n')
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// wait returns what was exported once it holds want (a span of the
// rotation), so that the scan covers the spans of the whole test.
func (c *traceCollector) wait(t *testing.T, want string) []byte {
	t.Helper()
	var got []byte
	waitFor(t, 15*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		got = bytes.Clone(c.exports)
		return bytes.Contains(got, []byte(want))
	})
	return got
}
