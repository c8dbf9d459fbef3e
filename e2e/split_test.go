package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
)

// TestServeAndWorkerSplit runs the production split, `furrow serve` and
// `furrow worker` as separate processes against one PostgreSQL, one Redis
// and one Temporal, and checks a reading is delivered end to end.
func TestServeAndWorkerSplit(t *testing.T) {
	testenv.SkipShort(t, "furrow serve, furrow worker and a Temporal server")
	db := newDatabase(t)
	tmp := newTemporal(t)
	rc := newReceiver(t)
	env := tmp.env()
	env["FURROW_DATABASE_URL"] = db
	env["FURROW_REDIS_URL"] = testenv.RedisURL(t)
	env["FURROW_WEBHOOK_ALLOW_PRIVATE"] = "true"
	env["FURROW_WEBHOOK_CA_FILE"] = rc.CAFile
	api := start(t, "serve", env)
	worker := launch(t, "worker", env)
	waitFor(t, 60*time.Second, func() bool { return strings.Contains(worker.Logs(), "worker started") })

	e := &devEnv{f: api, db: db, rc: rc, fx: newFixture(t, api, db)}
	hook := e.createWebhook(t, map[string]any{"url": rc.URL()})
	rc.setSecret(hook.Secret)
	e.postReading(t, 12.5)
	d := rc.next(t, 20*time.Second)
	if !d.Verified || d.Type != "metric.value" || d.Status != 200 {
		t.Fatalf("delivery through the split: %+v", d)
	}
	// The worker publishes the events it stores on the live bus, and
	// exports that bus's counters; it holds no sockets.
	m := scrape(t, worker.MetricsURL)
	if m["furrow_live_published_total"] == nil || m["furrow_live_dropped_total"] == nil || m["furrow_live_connections"] != nil {
		t.Fatalf("the worker's live series: published %v, dropped %v, connections %v; want the first two only",
			m["furrow_live_published_total"] != nil, m["furrow_live_dropped_total"] != nil, m["furrow_live_connections"] != nil)
	}
}
