package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv/testtemporal"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/dispatch"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/temporal/devserver"
	"github.com/furrowhq/furrow/workflows"
)

// These tests run dispatchers against a real PostgreSQL and a real
// (embedded) Temporal, one of them faulty, and measure how long the events
// of every farm wait. Bounds are generous for a loaded machine; the figures
// are logged.

// Bounds, generous for a loaded machine: takeoverBound is how long the
// faulty dispatcher's claims may keep events from the healthy one (a lease
// of 5 s plus a sweep of 2 s, with room; the 30 s lease before this fix
// exceeded it); dispatchBound is how long dispatching everything may take
// through the embedded Temporal, which is slow under the race detector.
const (
	takeoverBound = 20 * time.Second
	dispatchBound = 2 * time.Minute
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	code := m.Run()
	if tmpSrv != nil {
		_ = tmpSrv.Stop()
	}
	os.Exit(code)
}

var (
	tmpOnce sync.Once
	tmpSrv  *devserver.Server
	tmpErr  error
)

// temporalAddr starts the package's embedded Temporal once.
func temporalAddr(t *testing.T) string {
	t.Helper()
	tmpOnce.Do(func() { tmpSrv, tmpErr = testtemporal.Start() })
	if tmpErr != nil {
		t.Fatalf("embedded Temporal: %v", tmpErr)
	}
	return tmpSrv.FrontendAddr()
}

// dialTemporal connects at once: the SDK's lazy client initialises itself
// on first use without a lock, which the race detector reports when
// several starts are that first use together.
func dialTemporal(t *testing.T, addr string) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tc, err := temporal.Dial(ctx, temporal.Options{Address: addr, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	return tc
}

// cluster is one database with farms that each have a webhook, and one
// Temporal.
type cluster struct {
	t     *testing.T
	url   string
	conn  *pgx.Conn // the test's own queries, from the test goroutine only
	db    *store.DB
	tc    client.Client
	farms []furrow.Webhook // one webhook per farm
}

func newCluster(t *testing.T, farms int) *cluster {
	t.Helper()
	c := &cluster{t: t, url: testenv.NewDatabase(t, testenv.Migrator{Digest: store.MigrationsDigest(), Migrate: store.Migrate})}
	c.db = c.open(c.url)
	c.tc = dialTemporal(t, temporalAddr(t))
	ctx := context.Background()
	u, _, err := c.db.CreateUser(ctx, uuid.NewString()+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for i := range farms {
		f, err := c.db.CreateFarm(ctx, u.ID, fmt.Sprintf("farm %d", i))
		if err != nil {
			t.Fatal(err)
		}
		w, err := c.db.CreateWebhook(ctx, furrow.Webhook{ID: uuid.New(), FarmID: f.ID, URL: "https://hooks.example.com/in",
			Secret: furrow.WebhookSecretPrefix + "c2VjcmV0", Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		c.farms = append(c.farms, w)
	}
	return c
}

func (c *cluster) open(u string) *store.DB {
	c.t.Helper()
	// Few connections: the server's are shared with every test running.
	db, err := store.Open(context.Background(), u, store.Options{MaxConns: 4, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(db.Close)
	return db
}

// viaProxy opens a second store whose connections go through a proxy the
// test can cut.
func (c *cluster) viaProxy() (*store.DB, *testenv.Proxy) {
	c.t.Helper()
	u, err := url.Parse(c.url)
	if err != nil {
		c.t.Fatal(err)
	}
	p := testenv.NewProxy(c.t, u.Host)
	u.Host = p.Addr
	return c.open(u.String()), p
}

// addEvents stores n events spread over the farms, and returns them.
func (c *cluster) addEvents(n int) []furrow.Event {
	c.t.Helper()
	var out []furrow.Event
	for i := range n {
		e, err := c.db.CreateEvent(context.Background(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: c.farms[i%len(c.farms)].FarmID})
		if err != nil {
			c.t.Fatal(err)
		}
		out = append(out, e.Event)
	}
	return out
}

// dispatcher returns a dispatcher on outbox and webhooks, starting on the
// cluster's Temporal, counting its starts, logging into the test's log.
func (c *cluster) dispatcher(name string, outbox furrow.Outbox, hooks dispatch.Webhooks) (*dispatch.Dispatcher, *counter) {
	n := &counter{Client: c.tc}
	log := slog.New(slog.NewTextHandler(testWriter{c.t, name}, nil))
	// Starts get a minute: the embedded Temporal shares this process and,
	// under the race detector on a busy machine, can take seconds a start.
	cfg := dispatch.Config{StartTimeout: time.Minute}
	return dispatch.New(cfg, dispatch.Deps{Outbox: outbox, Webhooks: hooks, Starter: n, Logger: log}), n
}

// run runs d until the test ends.
func (c *cluster) run(d *dispatch.Dispatcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	c.t.Cleanup(func() { cancel(); <-done })
}

// waitDispatched waits until every event is dispatched and returns how long
// that took, failing the test past dispatchBound.
func (c *cluster) waitDispatched(events []furrow.Event) time.Duration {
	c.t.Helper()
	return c.waitUntil(dispatchBound, "undispatched", func() int { return c.undispatched(events) })
}

// waitTakenOver waits until no undispatched event is claimed in owner's
// name, expired or not, and returns how long that took, failing the test
// past takeoverBound.
func (c *cluster) waitTakenOver(owner uuid.UUID, events []furrow.Event) time.Duration {
	c.t.Helper()
	return c.waitUntil(takeoverBound, "still claimed by the faulty dispatcher", func() int { return c.claimedBy(owner, events, false) })
}

func (c *cluster) waitUntil(bound time.Duration, what string, left func() int) time.Duration {
	c.t.Helper()
	start := time.Now()
	for {
		n := left()
		if n == 0 {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			c.t.Fatalf("%d events %s after %v", n, what, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// claimedBy counts the undispatched events claimed in owner's name; live
// counts only unexpired claims.
func (c *cluster) claimedBy(owner uuid.UUID, events []furrow.Event, live bool) int {
	c.t.Helper()
	var n int
	c.query(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE id = ANY($1) AND dispatched_at_ms IS NULL
			AND lease_owner = $2 AND (NOT $3 OR lease_until_ms > $4)`,
			eventUUIDs(events), owner, live, time.Now().UnixMilli()).Scan(&n)
	})
	return n
}

func (c *cluster) query(f func(context.Context, *pgx.Conn) error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c.conn == nil {
		conn, err := pgx.Connect(ctx, c.url)
		if err != nil {
			c.t.Fatal(err)
		}
		c.conn = conn
		c.t.Cleanup(func() { _ = conn.Close(context.Background()) })
	}
	if err := f(ctx, c.conn); err != nil {
		c.t.Fatal(err)
	}
}

func eventUUIDs(events []furrow.Event) []uuid.UUID {
	ids := make([]uuid.UUID, len(events))
	for i, e := range events {
		ids[i], _ = furrow.ParseEventID(e.ID)
	}
	return ids
}

func (c *cluster) undispatched(events []furrow.Event) int {
	c.t.Helper()
	n := 0
	for _, d := range c.delays(events) {
		if d < 0 {
			n++
		}
	}
	return n
}

// delays returns, per event, the time from its occurrence to its dispatch
// (negative while undispatched).
func (c *cluster) delays(events []furrow.Event) []time.Duration {
	c.t.Helper()
	var ms []int64
	c.query(func(ctx context.Context, conn *pgx.Conn) error {
		rows, _ := conn.Query(ctx, `SELECT COALESCE(dispatched_at_ms - occurred_at_ms, -1) FROM events WHERE id = ANY($1)`, eventUUIDs(events))
		var err error
		ms, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

// checkStarted checks that Temporal holds the delivery of every event.
func (c *cluster) checkStarted(events []furrow.Event) {
	c.t.Helper()
	hooks := map[uuid.UUID]uuid.UUID{}
	for _, w := range c.farms {
		hooks[w.FarmID] = w.ID
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, e := range events {
		id := workflows.DeliveryWorkflowID(hooks[e.FarmID], e.ID)
		if _, err := c.tc.DescribeWorkflowExecution(ctx, id, ""); err != nil {
			c.t.Fatalf("delivery %s not in Temporal: %v", id, err)
		}
	}
}

// counter is a Starter counting the workflows it starts.
type counter struct {
	client.Client
	mu      sync.Mutex
	started int
}

func (n *counter) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	run, err := n.Client.ExecuteWorkflow(ctx, o, wf, args...)
	if err == nil {
		n.mu.Lock()
		n.started++
		n.mu.Unlock()
	}
	return run, err
}

func (n *counter) count() int { n.mu.Lock(); defer n.mu.Unlock(); return n.started }

// lookups wraps the dispatcher's Webhooks, running before ahead of each
// webhook lookup; an error from it fails the lookup.
type lookups struct {
	dispatch.Webhooks
	before func(ctx context.Context, farm uuid.UUID) error
}

func (l lookups) DispatchWebhooks(ctx context.Context, farm uuid.UUID) ([]furrow.Webhook, error) {
	if err := l.before(ctx, farm); err != nil {
		return nil, err
	}
	return l.Webhooks.DispatchWebhooks(ctx, farm)
}

// testWriter sends a dispatcher's log lines to the test log.
type testWriter struct {
	t    *testing.T
	name string
}

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s: %s", w.name, p)
	return len(p), nil
}

func stats(ds []time.Duration) (median, worst time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}

// One dispatcher claims every event, then loses its database connection
// (cut through the proxy, for the rest of the test) before it can dispatch
// or give anything back. The other takes every event of every farm once
// the lost claims expire, and dispatches them.
func TestFailoverDatabaseCutAfterClaim(t *testing.T) {
	testenv.SkipShort(t, "two dispatchers and an embedded Temporal server behind a fault-injecting proxy")
	cutAfterClaim(t, "database cut after claiming", 0)
}

// A dispatcher whose database goes away for half a second gives its claims
// back as soon as the database answers again: the other need not wait for
// the lease.
func TestFailoverGivesBackWhenDatabaseReturns(t *testing.T) {
	testenv.SkipShort(t, "two dispatchers and an embedded Temporal server behind a fault-injecting proxy")
	cutAfterClaim(t, "database back after 0.5 s", 500*time.Millisecond)
}

// cutAfterClaim runs a dispatcher whose database connection is cut right
// after it claimed every event, restored after back (0: never), beside a
// healthy one started then, and checks the healthy one takes everything.
func cutAfterClaim(t *testing.T, what string, back time.Duration) {
	c := newCluster(t, 4)
	faultyDB, proxy := c.viaProxy()
	events := c.addEvents(24)
	claimed := make(chan struct{})
	var once sync.Once
	cut := lookups{Webhooks: faultyDB, before: func(context.Context, uuid.UUID) error {
		once.Do(func() {
			proxy.Cut()
			close(claimed)
			if back > 0 {
				time.AfterFunc(back, proxy.Restore)
			}
		})
		return nil
	}}
	faulty, faultyStarts := c.dispatcher("faulty", faultyDB, cut)
	c.run(faulty)
	<-claimed
	healthy, _ := c.dispatcher("healthy", c.db, c.db)
	c.run(healthy)
	took := c.waitTakenOver(faulty.Owner(), events)
	all := took + c.waitDispatched(events)
	t.Logf("FIGURE %s: claims free %v after the cut; all %d events dispatched after %v",
		what, took.Round(10*time.Millisecond), len(events), all.Round(10*time.Millisecond))
	if back == 0 && faultyStarts.count() != 0 {
		t.Fatalf("the cut dispatcher started %d deliveries", faultyStarts.count())
	}
	c.checkStarted(events)
}

// A dispatcher killed (SIGKILL) while holding claims cannot give them back;
// they expire with the lease and the other dispatcher takes them.
func TestFailoverKilledAfterClaim(t *testing.T) {
	testenv.SkipShort(t, "a child dispatcher process, another dispatcher and an embedded Temporal server")
	c := newCluster(t, 4)
	events := c.addEvents(24)
	child := startChild(t, c.url, temporalAddr(t))
	healthy, starts := c.dispatcher("healthy", c.db, c.db)
	c.run(healthy)
	if n := c.claimedBy(child.owner, events, true); n != len(events) {
		t.Fatalf("the child holds %d live claims, want %d", n, len(events))
	}
	child.kill()
	took := c.waitTakenOver(child.owner, events)
	all := took + c.waitDispatched(events)
	t.Logf("FIGURE killed after claiming: claims free %v after the kill; all %d events dispatched after %v",
		took.Round(10*time.Millisecond), len(events), all.Round(10*time.Millisecond))
	if starts.count() == 0 {
		t.Fatal("the healthy dispatcher started nothing")
	}
	c.checkStarted(events)
}

// A dispatcher stopped with SIGTERM while holding claims gives them back
// before its process exits: nobody waits for the lease.
func TestFailoverSIGTERMGivesClaimsBack(t *testing.T) {
	testenv.SkipShort(t, "a child dispatcher process, another dispatcher and an embedded Temporal server")
	c := newCluster(t, 4)
	events := c.addEvents(24)
	child := startChild(t, c.url, temporalAddr(t))
	start := time.Now()
	if err := child.term(); err != nil {
		t.Fatalf("the stopped dispatcher: %v", err)
	}
	exited := time.Since(start)
	// Nobody else runs yet: only the child's release clears its claims.
	if n := c.claimedBy(child.owner, events, false); n != 0 {
		t.Fatalf("%d events still claimed by the stopped dispatcher", n)
	}
	healthy, _ := c.dispatcher("healthy", c.db, c.db)
	c.run(healthy)
	all := c.waitDispatched(events)
	t.Logf("FIGURE SIGTERM while claiming: claims given back and process exited in %v; all %d events dispatched %v later",
		exited.Round(time.Millisecond), len(events), all.Round(10*time.Millisecond))
}

// A dispatcher whose every webhook lookup fails for the whole test (a
// database role that can store but not list webhooks) runs beside a healthy
// one while events arrive in bursts at the healthy one. It keeps no event
// claimed for more than a moment, and backs off.
func TestFailoverLookupsAlwaysFail(t *testing.T) {
	testenv.SkipShort(t, "two dispatchers and an embedded Temporal server")
	c := newCluster(t, 4)
	broken := lookups{Webhooks: c.db, before: func(context.Context, uuid.UUID) error {
		return errors.New("store: list webhooks: postgres error 42501 ()")
	}}
	faulty, faultyStarts := c.dispatcher("faulty", c.db, broken)
	healthy, _ := c.dispatcher("healthy", c.db, c.db)
	c.run(faulty)
	c.run(healthy)
	var events []furrow.Event
	var held heldWatch
	for range 8 {
		events = append(events, c.addEvents(8)...)
		healthy.Wake(events[len(events)-1].FarmID) // the instance that stored them wakes its own dispatcher
		for range 8 {
			held.sample(c, faulty.Owner(), events)
			time.Sleep(50 * time.Millisecond)
		}
	}
	for c.undispatched(events) > 0 && held.elapsed() < dispatchBound {
		held.sample(c, faulty.Owner(), events)
		time.Sleep(50 * time.Millisecond)
	}
	c.waitDispatched(events)
	median, worst := stats(c.delays(events))
	t.Logf("FIGURE lookups always failing on one of two dispatchers: %d events in 8 bursts; delay median %v, max %v; the broken one held an event at most %v",
		len(events), median, worst, held.longest.Round(10*time.Millisecond))
	if held.longest > 5*time.Second {
		t.Fatalf("the broken dispatcher held an event claimed for %v", held.longest)
	}
	if faultyStarts.count() != 0 {
		t.Fatalf("the broken dispatcher started %d deliveries", faultyStarts.count())
	}
	c.checkStarted(events)
}

// heldWatch samples how long events stay claimed by one dispatcher.
type heldWatch struct {
	start   time.Time
	since   map[uuid.UUID]time.Time // event -> first seen held, this streak
	longest time.Duration
}

func (h *heldWatch) elapsed() time.Duration { return time.Since(h.start) }

func (h *heldWatch) sample(c *cluster, owner uuid.UUID, events []furrow.Event) {
	c.t.Helper()
	now := time.Now()
	if h.since == nil {
		h.start, h.since = now, map[uuid.UUID]time.Time{}
	}
	var held []uuid.UUID
	c.query(func(ctx context.Context, conn *pgx.Conn) error {
		rows, _ := conn.Query(ctx, `SELECT id FROM events WHERE id = ANY($1) AND dispatched_at_ms IS NULL
			AND lease_owner = $2 AND lease_until_ms > $3`, eventUUIDs(events), owner, now.UnixMilli())
		var err error
		held, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		return err
	})
	next := map[uuid.UUID]time.Time{}
	for _, id := range held {
		first, ok := h.since[id]
		if !ok {
			first = now
		}
		next[id] = first
		h.longest = max(h.longest, now.Sub(first))
	}
	h.since = next
}

// countingOutbox counts how often each event is claimed.
type countingOutbox struct {
	furrow.Outbox
	mu     sync.Mutex
	claims map[string]int
}

func (o *countingOutbox) ClaimEvents(ctx context.Context, c furrow.Claim) ([]furrow.Event, error) {
	es, err := o.Outbox.ClaimEvents(ctx, c)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range es {
		o.claims[e.ID]++
	}
	return es, err
}

// On a single dispatcher, one farm whose webhook lookup fails does not
// hold back the other farms' events: each of them is dispatched by the
// pass that first claims it, and the failing farm's events are not left
// claimed.
func TestOneFarmFailingDoesNotDelayOthers(t *testing.T) {
	testenv.SkipShort(t, "a dispatcher and an embedded Temporal server")
	c := newCluster(t, 3)
	bad := c.farms[0].FarmID
	hooks := lookups{Webhooks: c.db, before: func(_ context.Context, farm uuid.UUID) error {
		if farm == bad {
			return errors.New("store: list webhooks: scan failed")
		}
		return nil
	}}
	outbox := &countingOutbox{Outbox: c.db, claims: map[string]int{}}
	d, _ := c.dispatcher("single", outbox, hooks)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	var good, badEvents []furrow.Event
	for range 4 {
		for _, e := range c.addEvents(6) {
			if e.FarmID == bad {
				badEvents = append(badEvents, e)
			} else {
				good = append(good, e)
			}
		}
		d.Wake(good[len(good)-1].FarmID)
		time.Sleep(300 * time.Millisecond)
	}
	c.waitDispatched(good)
	cancel()
	<-done
	median, worst := stats(c.delays(good))
	t.Logf("FIGURE one farm failing: the other farms' %d events waited median %v, max %v", len(good), median, worst)
	for _, e := range good {
		if n := outbox.claims[e.ID]; n != 1 {
			t.Errorf("event %s of a healthy farm was claimed %d times, want once", e.ID, n)
		}
	}
	if n := c.undispatched(badEvents); n != len(badEvents) {
		t.Fatalf("%d of the failing farm's events undispatched, want all %d", n, len(badEvents))
	}
	if n := c.claimedBy(d.Owner(), badEvents, true); n != 0 {
		t.Fatalf("%d of the failing farm's events left claimed", n)
	}
}
