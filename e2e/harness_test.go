package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/loopback"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := loopback.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// newDatabase returns the URL of a fresh, migrated database for t.
func newDatabase(t *testing.T) string {
	return testenv.NewDatabase(t, testenv.Migrator{Digest: store.MigrationsDigest(), Migrate: store.Migrate})
}

// furrow is a furrow API the test talks to: a process it started, or
// one of a cluster, which has no process (p is nil).
type furrow struct {
	t   *testing.T
	URL string
	// MetricsURL is the process's GET /metrics, on its own port.
	MetricsURL string
	p          *loopback.Process
}

// Stdout returns what the process printed so far.
func (f *furrow) Stdout() string { return f.p.Stdout() }

// Logs returns what the process logged so far.
func (f *furrow) Logs() string { return f.p.Logs() }

// start runs `furrow <command>` with env added to this process's
// environment and waits until /healthz answers. The process is stopped
// when t ends, and its output is shown if t failed.
func start(t *testing.T, command string, env map[string]string) *furrow {
	t.Helper()
	f := launch(t, command, env)
	f.waitHealthy(60 * time.Second)
	return f
}

// launch runs `furrow <command>` like start, without waiting for it.
func launch(t *testing.T, command string, env map[string]string) *furrow {
	t.Helper()
	if binary == "" {
		t.Fatal("the furrow binary is not built in -short mode: the test must call testenv.SkipShort first")
	}
	full := append(os.Environ(), "FURROW_HTTP_ADDR="+freeAddr(t))
	for k, v := range env {
		full = append(full, k+"="+v)
	}
	return launchBinary(t, binary, command, full)
}

// launchBinary runs `bin command` with exactly the environment env; the
// API and metrics listeners get free ports unless env names them.
func launchBinary(t *testing.T, bin, command string, env []string) *furrow {
	t.Helper()
	p, err := loopback.Start(loopback.Command{Binary: bin, Args: []string{command}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("furrow %s stdout:\n%s\nlogs:\n%s", command, p.Stdout(), p.Logs())
		}
	})
	return &furrow{t: t, URL: p.URL, MetricsURL: p.MetricsURL, p: p}
}

func (f *furrow) waitHealthy(limit time.Duration) {
	f.t.Helper()
	if err := f.p.WaitHealthy(context.Background(), limit); err != nil {
		f.t.Fatalf("furrow: %v:\n%s", err, f.Logs())
	}
}

// admin runs `furrow admin create-user` against databaseURL and returns the
// user's id and token.
func createUser(t *testing.T, databaseURL, email string) (id, token string) {
	t.Helper()
	cmd := exec.Command(binary, "admin", "create-user", "--email", email)
	cmd.Env = append(os.Environ(), "FURROW_DATABASE_URL="+databaseURL)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("admin create-user: %v", err)
	}
	var u struct{ ID, Email, Token string }
	if err := json.Unmarshal(out, &u); err != nil || u.Email != email || !strings.HasPrefix(u.Token, "fut_") {
		t.Fatalf("admin create-user printed %q (%v)", out, err)
	}
	return u.ID, u.Token
}

// response is a decoded HTTP answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on error.
func (r response) JSON(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// errorCode returns the `error` field of an error body.
func (r response) errorCode(t *testing.T) (code, reason string) {
	t.Helper()
	var e struct{ Error, Reason string }
	r.JSON(t, &e)
	return e.Error, e.Reason
}

// do sends one request with c (nil: the default client), validating it and
// its answer against the OpenAPI document. body may be nil, a string (sent
// as is) or a value (JSON-encoded). headers alternate name, value.
func do(t *testing.T, c *http.Client, method, url string, body any, headers ...string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := checked(t, c).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// expect fails t unless r has the status and, when code is not "", the
// error code.
func expect(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Body)
	}
	if code != "" {
		if got, _ := r.errorCode(t); got != code {
			t.Fatalf("error %q, want %q; body %s", got, code, r.Body)
		}
	}
}

// fixture is a user with a farm and a device on a running furrow.
type fixture struct {
	UserID, Token string
	FarmID        string
	DeviceID, Key string
}

func newFixture(t *testing.T, f *furrow, databaseURL string) fixture {
	t.Helper()
	var fx fixture
	fx.UserID, fx.Token = createUser(t, databaseURL, fmt.Sprintf("owner-%d@example.com", time.Now().UnixNano()))
	r := do(t, nil, "POST", f.URL+"/api/farms", map[string]string{"name": "North field"}, bearer(fx.Token)...)
	expect(t, r, 201, "")
	var farm struct{ ID string }
	r.JSON(t, &farm)
	fx.FarmID = farm.ID
	fx.DeviceID, fx.Key = newDevice(t, f, fx)
	return fx
}

func newDevice(t *testing.T, f *furrow, fx fixture) (id, key string) {
	t.Helper()
	r := do(t, nil, "POST", f.URL+"/api/farms/"+fx.FarmID+"/devices", map[string]string{"name": "probe"}, bearer(fx.Token)...)
	expect(t, r, 201, "")
	var d struct {
		ID     string
		APIKey string `json:"api_key"`
	}
	r.JSON(t, &d)
	if !strings.HasPrefix(d.APIKey, "fdk_") {
		t.Fatalf("device key %q lacks fdk_ prefix", d.APIKey)
	}
	return d.ID, d.APIKey
}
