package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow/temporal/visindex"
)

// cluster is the topology of deploy/local/cluster.sh for one test: a
// PostgreSQL-backed Temporal server, Redis, 2 × serve and 2 × worker, each a
// process of its own.
type cluster struct {
	t    *testing.T
	dir  string
	env  []string
	addr map[string]string // "name: address" lines of `up`
}

// upCluster runs `cluster.sh up` with the FURROW_* settings of env and
// stops everything with `down` when t ends. Building the Temporal server
// the first time takes minutes, hence the long bound.
func upCluster(t *testing.T, env map[string]string) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: t.TempDir(), addr: map[string]string{}}
	c.env = append(os.Environ(), "CLUSTER_DIR="+c.dir, "CLUSTER_FURROW_BIN="+binary)
	for k, v := range env {
		c.env = append(c.env, k+"="+v)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.showLogs()
		}
		if out, err := c.script(5*time.Minute, "down"); err != nil {
			t.Errorf("cluster.sh down: %v\n%s", err, out)
		}
	})
	out, err := c.script(25*time.Minute, "up")
	if err != nil {
		t.Fatalf("cluster.sh up: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if name, addr, ok := strings.Cut(sc.Text(), ": "); ok && !strings.HasPrefix(name, "cluster") {
			c.addr[name] = addr
		}
	}
	for _, name := range []string{"serve-1", "serve-2", "worker-1", "worker-2", "temporal", "redis", "database"} {
		if c.addr[name] == "" {
			t.Fatalf("cluster.sh up printed no %q line:\n%s", name, out)
		}
	}
	return c
}

// script runs cluster.sh with args and returns its stdout, or its stderr
// too on failure.
func (c *cluster) script(limit time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../deploy/local/cluster.sh", args...)
	cmd.Env = c.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// do runs a cluster.sh command that must succeed.
func (c *cluster) do(args ...string) {
	c.t.Helper()
	if out, err := c.script(3*time.Minute, args...); err != nil {
		c.t.Fatalf("cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// kill9 kills the process without letting it clean up.
func (c *cluster) kill9(name string) { c.do("stop", name, "KILL") }

// logs returns the log of one process.
func (c *cluster) logs(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "logs", name+".log"))
	return string(b)
}

func (c *cluster) showLogs() {
	for _, name := range []string{"serve-1", "serve-2", "worker-1", "worker-2", "temporal"} {
		l := c.logs(name)
		if len(l) > 6000 {
			l = "…" + l[len(l)-6000:]
		}
		c.t.Logf("--- %s log (tail):\n%s", name, l)
	}
}

// serves returns the URLs of the API processes.
func (c *cluster) serves() []string { return []string{c.addr["serve-1"], c.addr["serve-2"]} }

// storedValues returns the values of the readings stored for farm.
func (c *cluster) storedValues(t *testing.T, farm string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.addr["database"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT value FROM readings WHERE farm_id = $1", farm)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, v := range vals {
		out[v] = true
	}
	return out
}

// credential is one device and its key.
type credential struct{ device, key string }

// poster posts readings with unique values to the serves in turn, as a
// client would that sends an Idempotency-Key and moves to the next serve
// when one cannot be reached. It spreads readings over several devices to
// stay under the per-device rate limit.
type poster struct {
	urls   []string
	creds  []credential
	client *http.Client
	seq    atomic.Int64
	prefix int64

	mu       sync.Mutex
	accepted []string    // values answered 201
	statuses map[int]int // answers by status
	failures []error     // requests that got no answer from any serve
	broken   []error     // requests cut on a reused keep-alive connection, retried
	fresh    []error     // requests cut on a new connection, retried
}

var posterPrefix atomic.Int64

// Each exchange is validated against the OpenAPI document and fails t when
// they disagree.
func newPoster(t *testing.T, urls []string, creds []credential) *poster {
	tr := &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second}
	return &poster{
		urls: urls, creds: creds, statuses: map[int]int{},
		client: checked(t, &http.Client{Transport: tr, Timeout: 15 * time.Second}),
		prefix: posterPrefix.Add(1) * 1_000_000,
	}
}

// post sends one reading and returns the status (0 when no serve answered).
func (p *poster) post() int {
	n := p.seq.Add(1)
	value := fmt.Sprint(p.prefix + n)
	cred := p.creds[int(n)%len(p.creds)]
	body := fmt.Sprintf(`{"device_id":%q,"metric_id":220,"value":%s}`, cred.device, value)
	var lastErr error
	for i := range 2 * len(p.urls) {
		url := p.urls[(int(n)+i)%len(p.urls)]
		var reused atomic.Bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused.Store(i.Reused) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
			"POST", url+"/api/metric-values", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+cred.key)
		req.Header.Set("Content-Type", "application/json")
		// The same key on a retry stores nothing twice; it also lets the
		// transport replay a request lost on a closing keep-alive connection.
		req.Header.Set("Idempotency-Key", "k"+value)
		resp, err := p.client.Do(req)
		if err != nil {
			lastErr = err
			if !errors.Is(err, syscall.ECONNREFUSED) {
				p.mu.Lock()
				if reused.Load() {
					p.broken = append(p.broken, err)
				} else {
					p.fresh = append(p.fresh, err)
				}
				p.mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		resp.Body.Close()
		p.mu.Lock()
		p.statuses[resp.StatusCode]++
		if resp.StatusCode == 201 {
			p.accepted = append(p.accepted, value)
		}
		p.mu.Unlock()
		return resp.StatusCode
	}
	p.mu.Lock()
	p.failures = append(p.failures, lastErr)
	p.mu.Unlock()
	return 0
}

// steady posts at about rate per second until stop is closed, and returns
// when the last request ended.
func (p *poster) steady(rate int, stop <-chan struct{}) {
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			wg.Wait()
			return
		case <-tick.C:
			wg.Add(1)
			go func() { defer wg.Done(); p.post() }()
		}
	}
}

// summary returns the accepted values, the answers by status and the
// requests no serve answered.
func (p *poster) summary() ([]string, map[int]int, []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := map[int]int{}
	for k, v := range p.statuses {
		st[k] = v
	}
	return append([]string(nil), p.accepted...), st, append([]error(nil), p.failures...)
}

// cutConnections returns the requests cut on a reused keep-alive
// connection, and those cut on a new one.
func (p *poster) cutConnections() (reused, fresh []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.broken...), append([]error(nil), p.fresh...)
}

// checkOperatorSettings fails t unless the Temporal server of the cluster
// uses the pgx plugin for both stores and its visibility database holds
// none of the indexes visindex.Unused names.
func (c *cluster) checkOperatorSettings(t *testing.T) {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(c.dir, "temporal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(cfg), "pluginName: postgres12_pgx"); n != 2 {
		t.Errorf("temporal.yaml names postgres12_pgx %d times, want 2 (default and visibility stores)", n)
	}
	state, err := os.ReadFile(filepath.Join(c.dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	var url string
	for _, line := range strings.Split(string(state), "\n") {
		if v, ok := strings.CutPrefix(line, "VISIBILITY_URL="); ok {
			url = strings.Trim(v, "'")
		}
	}
	if url == "" {
		t.Fatalf("no VISIBILITY_URL in the cluster's state:\n%s", state)
	}
	var left, needed, total int
	err = withConn(t, url, 10*time.Second, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE c.relname = ANY($1)),
				count(*) FILTER (WHERE c.relname = ANY($2) AND i.indisvalid), count(*)
			FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE i.indrelid = 'executions_visibility'::regclass`,
			visindex.Unused, slices.Collect(maps.Keys(visindex.Restored))).Scan(&left, &needed, &total)
	})
	if err != nil || left != 0 || needed != len(visindex.Restored) || total < 10 {
		t.Errorf("visibility indexes: %d of the unused ones left, %d of the %d needed ones valid, %d in all (%v); want 0 left and the others kept",
			left, needed, len(visindex.Restored), total, err)
	}
}
