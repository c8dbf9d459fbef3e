package e2e

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	domain "github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv"
)

// ingestEnv is a `furrow serve` whose PostgreSQL connection runs through a
// proxy the test can cut, with Redis rate limiting, trusting only
// 127.0.0.2 as the TLS proxy.
type ingestEnv struct {
	f       *furrow
	env     map[string]string
	db      string
	proxy   *testenv.Proxy
	fx      fixture
	trusted *http.Client // connects from 127.0.0.2
}

func newIngestEnv(t *testing.T) *ingestEnv {
	t.Helper()
	db := newDatabase(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	u.Host = proxy.Addr
	tmp := newTemporal(t)
	env := tmp.env()
	env["FURROW_DATABASE_URL"] = u.String()
	env["FURROW_REDIS_URL"] = testenv.RedisURL(t)
	env["FURROW_TRUSTED_PROXIES"] = "127.0.0.2/32"
	f := start(t, "serve", env)
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	trusted := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	return &ingestEnv{f: f, env: env, db: db, proxy: proxy, fx: newFixture(t, f, db), trusted: trusted}
}

func (e *ingestEnv) post(t *testing.T, c *http.Client, body any, headers ...string) response {
	t.Helper()
	return do(t, c, "POST", e.f.URL+"/api/metric-values", body, headers...)
}

func reading(device string, value any) map[string]any {
	return map[string]any{"device_id": device, "metric_id": 220, "value": value}
}

func TestIngestEndToEnd(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server)")
	e := newIngestEnv(t)
	fx := e.fx
	key := bearer(fx.Key)

	t.Run("201 stores the reading with a server timestamp", func(t *testing.T) {
		before := time.Now().UnixMilli()
		r := e.post(t, nil, `{"device_id":"`+strings.ToUpper(fx.DeviceID)+`","metric_id":220,"value":21.50,"timestamp":"1","extra":true}`, key...)
		expect(t, r, 201, "")
		var got struct {
			DeviceID  string `json:"device_id"`
			MetricID  int    `json:"metric_id"`
			Value     string
			Timestamp string
		}
		r.JSON(t, &got)
		ts, err := strconv.ParseInt(got.Timestamp, 10, 64)
		if err != nil || ts < before || ts > time.Now().UnixMilli() {
			t.Fatalf("timestamp %q not the arrival time", got.Timestamp)
		}
		if got.DeviceID != fx.DeviceID || got.MetricID != 220 || got.Value != "21.50" {
			t.Fatalf("stored row %v", got)
		}
		rows := do(t, nil, "GET", e.f.URL+"/api/farms/"+fx.FarmID+"/readings?limit=1", nil, bearer(fx.Token)...)
		expect(t, rows, 200, "")
		if !strings.Contains(string(rows.Body), `"21.50"`) {
			t.Fatalf("polling API lacks the reading: %s", rows.Body)
		}
	})
	t.Run("400 for malformed bodies", func(t *testing.T) {
		for _, body := range []string{
			`{"metric_id":220,"value":1}`,
			`{"device_id":"` + fx.DeviceID + `","metric_id":"220","value":1}`,
			`{"device_id":"` + fx.DeviceID + `","metric_id":220.5,"value":1}`,
			`{"device_id":"` + fx.DeviceID + `","metric_id":220}`,
			`{"device_id":"` + fx.DeviceID + `","metric_id":220,"value":true}`,
			`{"device_id":"not-a-uuid","metric_id":220,"value":1}`,
			`not json`,
		} {
			r := e.post(t, nil, body, key...)
			expect(t, r, 400, "bad_request")
			if _, reason := r.errorCode(t); reason == "" {
				t.Errorf("400 for %s has no reason", body)
			}
		}
	})
	t.Run("401 missing and invalid credentials say which", func(t *testing.T) {
		r := e.post(t, nil, reading(fx.DeviceID, 1))
		expect(t, r, 401, "unauthorized")
		_, missing := r.errorCode(t)
		r = e.post(t, nil, reading(fx.DeviceID, 1), bearer("fdk_wrong")...)
		expect(t, r, 401, "unauthorized")
		_, invalid := r.errorCode(t)
		if !strings.Contains(missing, "missing") || !strings.Contains(invalid, "invalid") {
			t.Fatalf("reasons %q / %q do not tell missing from invalid", missing, invalid)
		}
	})
	t.Run("403 when the body names another device", func(t *testing.T) {
		expect(t, e.post(t, nil, reading(uuid.NewString(), 1), key...), 403, "forbidden")
	})
	t.Run("413 for an oversized body", func(t *testing.T) {
		big := `{"device_id":"` + fx.DeviceID + `","metric_id":220,"value":"x","pad":"` + strings.Repeat("a", 70<<10) + `"}`
		expect(t, e.post(t, nil, big, key...), 413, "payload_too_large")
	})
	t.Run("client certificate from the trusted proxy", func(t *testing.T) {
		cert := []string{"X-Client-Cert-CN", "device:" + fx.DeviceID}
		expect(t, e.post(t, e.trusted, reading(fx.DeviceID, "7"), cert...), 201, "")
		// The certificate wins over a bearer key of another device.
		other, otherKey := newDevice(t, e.f, fx)
		both := append(cert, bearer(otherKey)...)
		expect(t, e.post(t, e.trusted, reading(fx.DeviceID, 1), both...), 201, "")
		expect(t, e.post(t, e.trusted, reading(other, 1), both...), 403, "forbidden")
		expect(t, e.post(t, e.trusted, reading(fx.DeviceID, 1), "X-Client-Cert-CN", "device:"+uuid.NewString()), 401, "unauthorized")
	})
	t.Run("certificate header from an untrusted peer is ignored", func(t *testing.T) {
		spoof := []string{"X-Client-Cert-CN", "device:" + fx.DeviceID}
		expect(t, e.post(t, nil, reading(fx.DeviceID, 1), spoof...), 401, "unauthorized")
		other, otherKey := newDevice(t, e.f, fx)
		// The bearer key decides, so the spoofed device is not believed.
		r := e.post(t, nil, reading(other, 1), append(spoof, bearer(otherKey)...)...)
		expect(t, r, 201, "")
	})
	t.Run("a rotated key is refused at once on every instance", func(t *testing.T) {
		// Both instances have just accepted the old key, so both remember it.
		second := start(t, "serve", e.env)
		id, old := newDevice(t, e.f, fx)
		for _, f := range []*furrow{e.f, second} {
			expect(t, do(t, nil, "POST", f.URL+"/api/metric-values", reading(id, 1), bearer(old)...), 201, "")
		}
		r := do(t, nil, "POST", e.f.URL+"/api/farms/"+fx.FarmID+"/devices/"+id+"/keys", nil, bearer(fx.Token)...)
		expect(t, r, 201, "")
		var k struct {
			APIKey string `json:"api_key"`
		}
		r.JSON(t, &k)
		for _, f := range []*furrow{second, e.f} {
			expect(t, do(t, nil, "POST", f.URL+"/api/metric-values", reading(id, 1), bearer(old)...), 401, "unauthorized")
			expect(t, do(t, nil, "POST", f.URL+"/api/metric-values", map[string]any{}, bearer(old)...), 401, "unauthorized")
			expect(t, do(t, nil, "POST", f.URL+"/api/metric-values", reading(id, 1), bearer(k.APIKey)...), 201, "")
		}
	})
	t.Run("the 121st request in a minute is limited", func(t *testing.T) {
		id, k := newDevice(t, e.f, fx)
		for i := 1; i <= domain.RateLimit; i++ {
			expect(t, e.post(t, nil, reading(id, i), bearer(k)...), 201, "")
		}
		r := e.post(t, nil, reading(id, 121), bearer(k)...)
		expect(t, r, 429, "rate_limited")
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 60 {
			t.Fatalf("retry-after %q", r.Header.Get("Retry-After"))
		}
		// Probes are exempt: more of each than the limit, from this client
		// and carrying the spent device's key, all answer 200. A limit
		// counted per client address, or applied before the route, would
		// refuse them.
		for i := 1; i <= domain.RateLimit+1; i++ {
			for _, probe := range []string{"/healthz", "/readyz"} {
				if r := do(t, nil, "GET", e.f.URL+probe, nil, bearer(k)...); r.Status != 200 {
					t.Fatalf("%s #%d after the device's limit is spent: %d %s, want 200", probe, i, r.Status, r.Body)
				}
			}
		}
		// Other credentials have their own budget.
		expect(t, e.post(t, nil, reading(fx.DeviceID, 1), key...), 201, "")
	})
	t.Run("readyz follows PostgreSQL; 500 while it is unreachable", func(t *testing.T) {
		expect(t, do(t, nil, "GET", e.f.URL+"/readyz", nil), 200, "")
		e.proxy.Cut()
		r := do(t, nil, "GET", e.f.URL+"/readyz", nil)
		if r.Status != 503 || !strings.Contains(string(r.Body), `"unavailable"`) {
			t.Fatalf("readyz while down: %d %s", r.Status, r.Body)
		}
		expect(t, do(t, nil, "GET", e.f.URL+"/healthz", nil), 200, "")
		id := fx.DeviceID
		r = e.post(t, e.trusted, reading(id, 1), "X-Client-Cert-CN", "device:"+id)
		expect(t, r, 500, "internal_error")
		e.proxy.Restore()
		waitFor(t, 10*time.Second, func() bool {
			return do(t, nil, "GET", e.f.URL+"/readyz", nil).Status == 200
		})
		expect(t, e.post(t, nil, reading(fx.DeviceID, 1), key...), 201, "")
	})
}

// waitFor polls cond until it holds or the limit passes.
func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("condition not met within %s", limit)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
