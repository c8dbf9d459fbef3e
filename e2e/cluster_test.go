package e2e

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow/internal/testenv"
)

// TestProductionCluster runs the production topology of
// deploy/local/cluster.sh — a PostgreSQL-backed Temporal server built from
// the official module, Redis, 2 × serve, 2 × worker — and breaks it the
// ways production breaks. The parts share one cluster to keep CI time
// reasonable; each uses its own farm and receiver, and waits until its
// deliveries are done before the next starts.
func TestProductionCluster(t *testing.T) {
	testenv.SkipShort(t, "the production topology (a PostgreSQL-backed Temporal server, Redis, 2 serve, 2 worker)")
	first := newReceiver(t) // every httptest TLS server shares its certificate
	c := upCluster(t, map[string]string{
		"FURROW_RETRY_SCHEDULE":        "1s,1s,1s,1s,1s,1s,1s",
		"FURROW_WEBHOOK_ALLOW_PRIVATE": "true",
		"FURROW_WEBHOOK_CA_FILE":       first.CAFile,
		"FURROW_SHUTDOWN_TIMEOUT":      "10s",
	})
	t.Run("the server runs with the documented operator settings", func(t *testing.T) {
		c.checkOperatorSettings(t)
	})
	t.Run("readings posted to both serves are stored and delivered signed", func(t *testing.T) {
		f := newClusterFarm(t, c, 1, true)
		p := f.poster()
		for range 40 {
			if st := p.post(); st != 201 {
				t.Fatalf("reading answered %d", st)
			}
		}
		f.allStoredAndDelivered(t, p, 2*time.Minute)
		for _, d := range f.rc.snapshot() {
			if !d.Verified || d.Type != "metric.value" {
				t.Fatalf("delivery %+v", d)
			}
		}
	})
	t.Run("kill -9 of a worker in the middle of retry chains loses nothing", func(t *testing.T) {
		f := newClusterFarm(t, c, 1, true)
		// Attempts 1 to 3 of every event fail: the chains are in retries,
		// which only the worker processes run.
		f.rc.setAnswer(func(_ string, nth int) int {
			if nth <= 3 {
				return 503
			}
			return 200
		})
		p := f.poster()
		for range 30 {
			if st := p.post(); st != 201 {
				t.Fatalf("reading answered %d", st)
			}
		}
		waitFor(t, time.Minute, func() bool { return f.rc.countStatus(503) >= 40 })
		c.kill9("worker-1")
		f.allStoredAndDelivered(t, p, 3*time.Minute)
		c.do("start", "worker-1")
	})
	t.Run("kill -9 of a serve under load: every 201 is stored and delivered", func(t *testing.T) {
		f := newClusterFarm(t, c, 8, true)
		p := f.poster()
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { p.steady(20, stop); close(done) }()
		time.Sleep(4 * time.Second)
		c.kill9("serve-1")
		time.Sleep(4 * time.Second)
		close(stop)
		<-done
		_, statuses, failures := p.summary()
		if len(failures) > 0 || statuses[201] == 0 || len(statuses) != 1 {
			t.Fatalf("answers %v, requests without answer %v", statuses, failures)
		}
		f.allStoredAndDelivered(t, p, 3*time.Minute)
		c.do("start", "serve-1")
	})
	t.Run("Temporal stopped for 30 s: readings still accepted, all delivered after", func(t *testing.T) {
		f := newClusterFarm(t, c, 4, true)
		p := f.poster()
		c.do("stop", "temporal")
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { p.steady(5, stop); close(done) }()
		time.Sleep(30 * time.Second)
		close(stop)
		<-done
		c.do("start", "temporal")
		accepted, statuses, failures := p.summary()
		if len(failures) > 0 || len(statuses) != 1 || len(accepted) < 100 {
			t.Fatalf("while Temporal was down: answers %v, without answer %v", statuses, failures)
		}
		f.allStoredAndDelivered(t, p, 4*time.Minute)
	})
	t.Run("rolling SIGTERM restart of both serves under load: no 5xx, no reset", func(t *testing.T) {
		f := newClusterFarm(t, c, 8, true)
		p := f.poster()
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { p.steady(20, stop); close(done) }()
		for _, name := range []string{"serve-1", "serve-2"} {
			time.Sleep(3 * time.Second)
			began := time.Now()
			c.do("stop", name, "TERM")
			// FURROW_SHUTDOWN_TIMEOUT is 10 s: drain, requests, activities.
			if took := time.Since(began); took > 30*time.Second {
				t.Errorf("%s took %s to stop on SIGTERM", name, took)
			}
			c.do("start", name)
		}
		time.Sleep(3 * time.Second)
		close(stop)
		<-done
		_, statuses, failures := p.summary()
		reused, fresh := p.cutConnections()
		if len(failures) > 0 || len(reused) > 0 || len(statuses) != 1 || statuses[201] == 0 {
			t.Fatalf("during the rolling restart: answers %v, without answer %v, cut keep-alive connections %v",
				statuses, failures, reused)
		}
		// A connection the kernel completed but the server had not yet
		// accepted when its listener closed is reset; clients retry it
		// elsewhere like a refused one. It is rare, and counted.
		t.Logf("%d readings; new connections reset at listener close: %d %v", statuses[201], len(fresh), fresh)
		if len(fresh) > 2 {
			t.Fatalf("%d new connections reset during two restarts: %v", len(fresh), fresh)
		}
		f.allStoredAndDelivered(t, p, 3*time.Minute)
	})
	t.Run("the rate limit is exact across both serves", func(t *testing.T) {
		f := newClusterFarm(t, c, 1, false)
		p := f.poster()
		for range 130 {
			p.post()
		}
		_, statuses, _ := p.summary()
		if statuses[201] != 120 || statuses[429] != 10 {
			t.Fatalf("130 readings in a burst from one device over two serves: %v, want 120 × 201 and 10 × 429", statuses)
		}
	})
	t.Run("Redis restarted: rate limiting fails open then recovers; live sockets reconnect", func(t *testing.T) {
		f := newClusterFarm(t, c, 1, false)
		topic := "farms/" + f.fx.FarmID + "/readings"
		live := newLiveClient(t, c.addr["serve-1"], f.fx.Token, topic)
		c.do("stop", "redis")
		p := f.poster()
		for range 5 {
			if st := p.post(); st != 201 {
				t.Fatalf("with Redis down a reading answered %d, want 201 (fail open)", st)
			}
		}
		c.do("start", "redis")
		// Readings posted on serve-2 reach the socket on serve-1 through
		// Redis again once both have reconnected.
		s2 := newPoster(t, []string{c.addr["serve-2"]}, p.creds)
		waitFor(t, time.Minute, func() bool {
			s2.post()
			posted, _, _ := s2.summary()
			for {
				select {
				case m := <-live.msgs:
					if m.Type == "" && slices.Contains(posted, m.Value) {
						return true
					}
				case <-time.After(500 * time.Millisecond):
					return false
				}
			}
		})
		// The limiter remembers the failure for a few seconds (a breaker)
		// and lets requests through meanwhile; then it is exact again.
		var last map[int]int
		waitFor(t, time.Minute, func() bool {
			limited := newClusterFarm(t, c, 1, false).poster()
			for range 121 {
				limited.post()
			}
			_, last, _ = limited.summary()
			return last[201] == 120 && last[429] == 1
		})
		t.Logf("after Redis came back, 121 readings from one device: %v", last)
	})
	t.Run("disable after 5 failed chains, reenable signal and reset work as on the dev server", func(t *testing.T) {
		f := newClusterFarm(t, c, 1, true)
		tc, err := client.Dial(client.Options{HostPort: c.addr["temporal"], Namespace: "default"})
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		e := f.devEnv()
		e.postReading(t, 7)
		if d := f.rc.next(t, time.Minute); d.Status != 200 || !d.Verified {
			t.Fatalf("first delivery %+v", d)
		}
		checkDisableReenableReset(t, e, tc, f.hook)
	})
	t.Run("failed deliveries are found by query and delivered again by one batch reset", func(t *testing.T) {
		f := newClusterFarm(t, c, 1, true)
		tc, err := client.Dial(client.Options{HostPort: c.addr["temporal"], Namespace: "default"})
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		checkBatchReset(t, f.devEnv(), tc, f.hook.ID)
	})
}

// clusterFarm is a farm with devices and a webhook to its own receiver, on
// the cluster.
type clusterFarm struct {
	t     *testing.T // the test the farm's posters report contract breaches to
	c     *cluster
	fx    fixture
	creds []credential
	rc    *receiver
	hook  webhookState
}

// newClusterFarm creates a farm with devices and, when hooked, a webhook
// to a receiver of its own. Farms used only for the rate limit have none:
// their receiver would be gone while retries to it still run.
func newClusterFarm(t *testing.T, c *cluster, devices int, hooked bool) *clusterFarm {
	t.Helper()
	api := &furrow{t: t, URL: c.addr["serve-2"]}
	f := &clusterFarm{t: t, c: c, fx: newFixture(t, api, c.addr["database"]), rc: newReceiver(t)}
	f.creds = append(f.creds, credential{f.fx.DeviceID, f.fx.Key})
	for len(f.creds) < devices {
		id, key := newDevice(t, api, f.fx)
		f.creds = append(f.creds, credential{id, key})
	}
	if hooked {
		f.hook = f.devEnv().createWebhook(t, map[string]any{"url": f.rc.URL()})
		f.rc.setSecret(f.hook.Secret)
	}
	return f
}

// devEnv presents the farm on serve-1 as the dev-server tests see it.
func (f *clusterFarm) devEnv() *devEnv {
	return &devEnv{f: &furrow{URL: f.c.addr["serve-1"]}, db: f.c.addr["database"], temporal: f.c.addr["temporal"], rc: f.rc, fx: f.fx}
}

func (f *clusterFarm) poster() *poster { return newPoster(f.t, f.c.serves(), f.creds) }

// allStoredAndDelivered waits until every reading p got a 201 for is stored
// and delivered with a 2xx, and bounds the duplicates at-least-once allows.
func (f *clusterFarm) allStoredAndDelivered(t *testing.T, p *poster, limit time.Duration) {
	t.Helper()
	accepted, _, _ := p.summary()
	stored := f.c.storedValues(t, f.fx.FarmID)
	for _, v := range accepted {
		if !stored[v] {
			t.Fatalf("reading %s was answered 201 but is not stored", v)
		}
	}
	var missing []string
	deadline := time.Now().Add(limit)
	for {
		ok := f.rc.okByValue()
		missing = missing[:0]
		for _, v := range accepted {
			if ok[v] == 0 {
				missing = append(missing, v)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d accepted readings not delivered within %s, e.g. %v", len(missing), len(accepted), limit, missing[:min(5, len(missing))])
		}
		time.Sleep(500 * time.Millisecond)
	}
	dups := 0
	for _, n := range f.rc.okByValue() {
		dups += n - 1
	}
	t.Logf("%d readings stored and delivered; %d duplicate deliveries", len(accepted), dups)
	if dups > len(accepted)/4+2 {
		t.Fatalf("%d duplicate deliveries for %d events: more than at-least-once explains", dups, len(accepted))
	}
}

// okByValue counts the 2xx answers by the reading value in the event.
func (rc *receiver) okByValue() map[string]int {
	out := map[string]int{}
	for _, d := range rc.snapshot() {
		if d.Status < 200 || d.Status > 299 {
			continue
		}
		var data struct{ Value string }
		if json.Unmarshal(d.Data, &data) == nil {
			out[data.Value]++
		}
	}
	return out
}

// countStatus counts the requests answered with status.
func (rc *receiver) countStatus(status int) int {
	n := 0
	for _, d := range rc.snapshot() {
		if d.Status == status {
			n++
		}
	}
	return n
}

// snapshot returns every request received so far.
func (rc *receiver) snapshot() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}
