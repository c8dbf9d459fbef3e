package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/loopback"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigDefaults(t *testing.T) {
	c, err := loadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour}
	if !slices.Equal(c.RetrySchedule, want) {
		t.Errorf("schedule = %v, want %v", c.RetrySchedule, want)
	}
	if c.HTTPAddr != ":8080" || c.TemporalNamespace != "default" || c.RedisURL != "" || c.DevDataDir != ".furrow" {
		t.Errorf("defaults wrong: %+v", c)
	}
	if c.DeviceStaleAfter != 30*time.Minute || c.DeviceOfflineAfter != 2*time.Hour || c.DeviceSweepEvery != time.Minute {
		t.Errorf("device thresholds wrong: %+v", c)
	}
	if c.ShutdownTimeout != 30*time.Second {
		t.Errorf("shutdown timeout = %s, want 30s", c.ShutdownTimeout)
	}
	wantP := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	if !slices.Equal(c.TrustedProxies, wantP) {
		t.Errorf("proxies = %v", c.TrustedProxies)
	}
	if c.WebhookAllowPrivate {
		t.Error("private webhooks allowed by default")
	}
	if c.ReadingsRetention != 0 {
		t.Errorf("readings retention %s by default, want 0 (forever)", c.ReadingsRetention)
	}
}

func TestConfigReadingsRetention(t *testing.T) {
	for v, want := range map[string]time.Duration{"0": 0, "": 0, "720h": 720 * time.Hour, "24h": 24 * time.Hour} {
		c, err := loadConfig(env(map[string]string{"FURROW_READINGS_RETENTION": v}))
		if err != nil || c.ReadingsRetention != want {
			t.Errorf("FURROW_READINGS_RETENTION=%q: %s, %v; want %s", v, c.ReadingsRetention, err, want)
		}
	}
}

func TestConfigOverrides(t *testing.T) {
	c, err := loadConfig(env(map[string]string{
		"FURROW_RETRY_SCHEDULE":        "1s, 2s",
		"FURROW_TRUSTED_PROXIES":       "10.0.0.7,192.168.0.0/16",
		"FURROW_WEBHOOK_ALLOW_PRIVATE": "true",
		"FURROW_DEVICE_STALE_AFTER":    "1m",
		"FURROW_DEVICE_OFFLINE_AFTER":  "5m",
		"FURROW_TEMPORAL_GZIP":         "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.TemporalGzip || !temporalOptions(c, &observability{}, nil).Gzip {
		t.Errorf("FURROW_TEMPORAL_GZIP=true did not reach the Temporal options")
	}
	if !slices.Equal(c.RetrySchedule, []time.Duration{time.Second, 2 * time.Second}) {
		t.Errorf("schedule = %v", c.RetrySchedule)
	}
	if len(c.TrustedProxies) != 2 || c.TrustedProxies[0] != netip.MustParsePrefix("10.0.0.7/32") {
		t.Errorf("proxies = %v", c.TrustedProxies)
	}
	if !c.WebhookAllowPrivate || c.DeviceOfflineAfter != 5*time.Minute {
		t.Errorf("overrides lost: %+v", c)
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	cases := map[string]string{
		"FURROW_RETRY_SCHEDULE":        "30s,soon",
		"FURROW_TRUSTED_PROXIES":       "not-an-ip",
		"FURROW_WEBHOOK_ALLOW_PRIVATE": "perhaps",
		"FURROW_TEMPORAL_GZIP":         "maybe",
		"FURROW_DEVICE_SWEEP_EVERY":    "-1m",
		"FURROW_DEVICE_OFFLINE_AFTER":  "1m",
		"FURROW_READINGS_RETENTION":    "12h",
	}
	for name, val := range cases {
		_, err := loadConfig(env(map[string]string{name: val}))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: err = %v, want one naming the variable", name, val, err)
		}
	}
}

func TestConfigMetricsAddr(t *testing.T) {
	for in, want := range map[string]string{"": ":9464", "127.0.0.1:9999": "127.0.0.1:9999", "off": "", "OFF": ""} {
		c, err := loadConfig(env(map[string]string{"FURROW_METRICS_ADDR": in}))
		if err != nil || c.MetricsAddr != want {
			t.Errorf("FURROW_METRICS_ADDR=%q: %q, %v; want %q", in, c.MetricsAddr, err, want)
		}
	}
}

// TestConfigTrustedProxies: FURROW_TRUSTED_PROXIES takes addresses and
// prefixes exactly as written, and refuses what would trust other peers
// than written, or none.
func TestConfigTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // the prefixes, or nil for an error
		err  []string // what the error must say
	}{
		{in: "172.30.89.10", want: []string{"172.30.89.10/32"}},
		{in: "172.30.89.10/32", want: []string{"172.30.89.10/32"}},
		{in: "172.30.89.0/24", want: []string{"172.30.89.0/24"}},
		{in: " 10.0.0.7 , ,192.168.0.0/16,", want: []string{"10.0.0.7/32", "192.168.0.0/16"}},
		{in: "::1", want: []string{"::1/128"}},
		{in: "2001:db8::/32,fd00::5/128", want: []string{"2001:db8::/32", "fd00::5/128"}},
		{in: "0.0.0.0/0", want: []string{"0.0.0.0/0"}},
		// IPv4-mapped IPv6 entries are the IPv4 ones: peers are compared unmapped.
		{in: "::ffff:172.30.89.10", want: []string{"172.30.89.10/32"}},
		{in: "::ffff:172.30.89.10/128", want: []string{"172.30.89.10/32"}},
		{in: "::ffff:172.30.89.0/120", want: []string{"172.30.89.0/24"}},
		{in: "::ffff:0.0.0.0/96", want: []string{"0.0.0.0/0"}},
		// Host bits set: the network, or the one address?
		{in: "172.30.89.10/24", err: []string{`"172.30.89.10/24"`, "host bits", "172.30.89.0/24", "172.30.89.10/32"}},
		{in: "127.0.0.2/8", err: []string{`"127.0.0.2/8"`, "127.0.0.0/8", "127.0.0.2/32"}},
		{in: "10.0.0.0/8,2001:db8::1/64", err: []string{`"2001:db8::1/64"`, "2001:db8::/64", "2001:db8::1/128"}},
		{in: "::ffff:172.30.89.10/120", err: []string{"host bits"}},
		{in: "::ffff:0:0/95", err: []string{"host bits"}},
		// Zones: a peer's address is never compared with one.
		{in: "fe80::1%eth0", err: []string{`"fe80::1%eth0"`, "zone", "%eth0"}},
		{in: "fe80::%eth0/64", err: []string{`"fe80::%eth0/64"`, "zone"}},
		// Not addresses at all.
		{in: "not-an-ip", err: []string{`"not-an-ip"`, "neither an address nor a CIDR prefix"}},
		{in: "10.0.0.0/33", err: []string{`"10.0.0.0/33"`, "not a CIDR prefix"}},
		{in: "10.0.0.0/", err: []string{`"10.0.0.0/"`, "not a CIDR prefix"}},
		{in: "proxy.local/32", err: []string{`"proxy.local/32"`, "not a CIDR prefix"}},
	} {
		c, err := loadConfig(env(map[string]string{"FURROW_TRUSTED_PROXIES": tc.in}))
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: accepted as %v, want an error", tc.in, c.TrustedProxies)
				continue
			}
			for _, s := range append([]string{"FURROW_TRUSTED_PROXIES"}, tc.err...) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q: error %q does not say %q", tc.in, err, s)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var got []string
		for _, p := range c.TrustedProxies {
			got = append(got, p.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
		}
	}
}

// A malformed database URL or listen address stops the process at start
// with an error naming the variable, and never quoting the password.
func TestConfigURLAndAddresses(t *testing.T) {
	const pw = "s3cr3t-pw"
	bad := []struct{ name, val string }{
		{"FURROW_DATABASE_URL", "postgres://furrow:" + pw + "@db:notaport/furrow"},
		{"FURROW_DATABASE_URL", "postgres://furrow:" + pw + "@db:5432/furrow?pool_max_conns=many"},
		{"FURROW_DATABASE_URL", "postgres://furrow:" + pw + "%zz@db/furrow"},
		{"FURROW_DATABASE_URL", "host=db password=" + pw + " bogus"},
		{"FURROW_HTTP_ADDR", "bogus"},
		{"FURROW_HTTP_ADDR", "8080"},
		{"FURROW_HTTP_ADDR", ":99999"},
		{"FURROW_PPROF_ADDR", "bogus"},
		{"FURROW_PPROF_ADDR", "127.0.0.1:no-such-service"},
		{"FURROW_METRICS_ADDR", "9464"},
	}
	for _, c := range bad {
		_, err := loadConfig(env(map[string]string{c.name: c.val}))
		if err == nil || !strings.HasPrefix(err.Error(), c.name+": ") || strings.Contains(err.Error(), pw) {
			t.Errorf("%s=%q: err = %v, want one naming the variable, without the password", c.name, c.val, err)
		}
	}
	good := []struct{ name, val string }{
		{"FURROW_DATABASE_URL", "postgres://furrow:pw@db.internal:5432/furrow?sslmode=require&pool_max_conns=20"},
		{"FURROW_DATABASE_URL", "host=db user=furrow password=pw dbname=furrow sslmode=disable"},
		{"FURROW_HTTP_ADDR", "0.0.0.0:8080"},
		{"FURROW_HTTP_ADDR", "[::1]:8080"},
		{"FURROW_HTTP_ADDR", ":0"},
		{"FURROW_PPROF_ADDR", "127.0.0.1:6060"},
		{"FURROW_PPROF_ADDR", ""},
	}
	for _, c := range good {
		if _, err := loadConfig(env(map[string]string{c.name: c.val})); err != nil {
			t.Errorf("%s=%q: %v", c.name, c.val, err)
		}
	}
}

// badSetting is a value loadConfig must refuse, with an error that starts
// with the name of the variable and says what.
type badSetting struct {
	env  map[string]string
	name string   // the variable the error must start with
	says []string // what else it must say
}

// checkRefused checks that each of bad is refused as it says, and that no
// error quotes secret.
func checkRefused(t *testing.T, bad []badSetting, secret string) {
	t.Helper()
	for _, c := range bad {
		_, err := loadConfig(env(c.env))
		if err == nil {
			t.Errorf("%v: accepted; want an error naming %s", c.env, c.name)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, c.name+": ") && !strings.HasPrefix(msg, c.name+" (") {
			t.Errorf("%v: %q does not start with %s", c.env, msg, c.name)
		}
		for _, s := range c.says {
			if !strings.Contains(msg, s) {
				t.Errorf("%v: %q does not say %q", c.env, msg, s)
			}
		}
		if strings.Contains(msg, "\n") || (secret != "" && strings.Contains(msg, secret)) {
			t.Errorf("%v: %q is not one line without the password", c.env, msg)
		}
	}
}

// checkAccepted checks that each of good loads.
func checkAccepted(t *testing.T, good []map[string]string) {
	t.Helper()
	for _, e := range good {
		if _, err := loadConfig(env(e)); err != nil {
			t.Errorf("%v: %v", e, err)
		}
	}
}

// one is the environment of one variable.
func one(name, val string) map[string]string { return map[string]string{name: val} }

// FURROW_TEMPORAL_ADDRESS is host:port as the client dials it: with a
// scheme, or without a port, it would be dialled in vain for ever.
func TestConfigTemporalAddress(t *testing.T) {
	const name = "FURROW_TEMPORAL_ADDRESS"
	checkRefused(t, []badSetting{
		{one(name, "http://127.0.0.1:7233"), name, []string{`"http://127.0.0.1:7233"`, "is not host:port"}},
		{one(name, "dns://resolver/temporal:7233"), name, []string{"is not host:port"}},
		{one(name, "dns:///temporal"), name, []string{"is not host:port"}},
		{one(name, "notahost"), name, []string{`"notahost"`, "is not host:port"}},
		{one(name, "temporal:"), name, []string{"not a port number"}},
		{one(name, "temporal:frontend"), name, []string{"not a port number"}},
		{one(name, "temporal:0"), name, []string{"not a port number"}},
		{one(name, "temporal:70000"), name, []string{"not a port number"}},
	}, "")
	checkAccepted(t, []map[string]string{
		one(name, "temporal-frontend:7233"), one(name, "127.0.0.1:7233"), one(name, "[::1]:7233"), one(name, ""),
		one(name, "dns:///temporal-frontend:7233"),
	})
}

// The embedded Temporal's addresses are ip:port, checked at load.
func TestConfigDevAddresses(t *testing.T) {
	var bad []badSetting
	for _, name := range []string{"FURROW_DEV_TEMPORAL_ADDR", "FURROW_DEV_UI_ADDR"} {
		bad = append(bad,
			badSetting{one(name, "localhost"), name, []string{`"localhost"`, "is not ip:port"}},
			badSetting{one(name, "http://127.0.0.1:8233"), name, []string{"is not ip:port"}},
			badSetting{one(name, "temporal.internal:7233"), name, []string{"must be an IP address"}},
			badSetting{one(name, "127.0.0.1:99999"), name, []string{"from 0 to 65535"}})
	}
	checkRefused(t, bad, "")
	checkAccepted(t, []map[string]string{
		one("FURROW_DEV_TEMPORAL_ADDR", "localhost:0"), one("FURROW_DEV_UI_ADDR", "0.0.0.0:8233"), one("FURROW_DEV_UI_ADDR", "[::1]:8233"),
	})
}

// FURROW_DEVICE_SWEEP_EVERY is at least Temporal's shortest schedule
// interval, which the server would refuse late without naming the setting.
func TestConfigSweepInterval(t *testing.T) {
	const name = "FURROW_DEVICE_SWEEP_EVERY"
	checkRefused(t, []badSetting{
		{one(name, "500ms"), name, []string{"500ms", "1s"}},
		{one(name, "999ms"), name, []string{"shortest interval"}},
	}, "")
	checkAccepted(t, []map[string]string{one(name, "1s"), one(name, "1500ms"), one(name, "24h")})
}

// FURROW_WEBHOOK_CA_FILE is read at load: a missing file, or one without a
// PEM certificate, stops the start before anything opens.
func TestConfigWebhookCAFile(t *testing.T) {
	const name = "FURROW_WEBHOOK_CA_FILE"
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkRefused(t, []badSetting{
		{one(name, filepath.Join(dir, "missing.pem")), name, []string{"missing.pem", "no such file"}},
		{one(name, notPEM), name, []string{"not.pem", "no PEM certificate"}},
		{one(name, dir), name, nil},
	}, "")
	cert, err := loopback.SelfSigned("receiver", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(good, cert.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig(env(map[string]string{name: good, "FURROW_WEBHOOK_ALLOW_PRIVATE": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	// The client of the deliveries trusts the file's certificate.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert.TLS()}}
	srv.StartTLS()
	defer srv.Close()
	resp, err := c.WebhookClient.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET from a receiver the CA file certifies: %v", err)
	}
	resp.Body.Close()
}

// The OTLP variables in force are checked: a protocol the exporter does not
// speak, or an endpoint that is no URL, would be misread without a word.
func TestConfigTracing(t *testing.T) {
	const (
		endpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
		tracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
		protocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
		tracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
		url            = "http://collector:4318"
	)
	checkRefused(t, []badSetting{
		{map[string]string{endpoint: url, protocol: "gprc"}, protocol, []string{`"gprc"`, "grpc or http/protobuf"}},
		{map[string]string{endpoint: url, protocol: "http/json"}, protocol, []string{`"http/json"`}},
		{map[string]string{tracesEndpoint: url, tracesProtocol: "grpcs", protocol: "grpc"}, tracesProtocol, []string{`"grpcs"`}},
		{one(endpoint, "collector:4318"), endpoint, []string{`"collector:4318"`, "http or https"}},
		{one(endpoint, "localhost"), endpoint, []string{"is not a URL"}},
		{one(endpoint, "://collector"), endpoint, []string{"is not a URL"}},
		{one(endpoint, "ftp://collector:4318"), endpoint, []string{"is not a URL"}},
		{one(endpoint, "http://"), endpoint, []string{"is not a URL"}},
		{map[string]string{endpoint: url, tracesEndpoint: "collector:4318"}, tracesEndpoint, []string{"is not a URL"}},
	}, "")
	// Credentials before the host never reach the error.
	for _, v := range []string{"ftp://user:s3cret@collector:4318", "s3cret@collector:4318", "http://user:s3cret@"} {
		_, err := loadConfig(env(one(endpoint, v)))
		if err == nil || !strings.Contains(err.Error(), endpoint) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s=%s: got %v; want an error naming the variable without the credentials", endpoint, v, err)
		}
	}
	for _, c := range []struct {
		env      map[string]string
		on       bool
		protocol string
	}{
		{nil, false, ""},
		{one(protocol, "gprc"), false, "gprc"}, // off: nothing reads it
		{one(endpoint, url), true, ""},
		{one(endpoint, "HTTPS://collector.example"), true, ""},
		{map[string]string{endpoint: "http://collector:4317", protocol: "grpc"}, true, "grpc"},
		{map[string]string{tracesEndpoint: url, protocol: "http/protobuf"}, true, "http/protobuf"},
		{map[string]string{endpoint: url, protocol: "http/json", tracesProtocol: "grpc"}, true, "grpc"},
		{map[string]string{endpoint: "not a url", tracesEndpoint: url}, true, ""},
	} {
		cfg, err := loadConfig(env(c.env))
		if err != nil || cfg.Tracing != c.on || (c.on && cfg.TraceProtocol != c.protocol) {
			t.Errorf("%v: tracing %v over %q, %v; want %v over %q", c.env, cfg.Tracing, cfg.TraceProtocol, err, c.on, c.protocol)
		}
	}
}

// FURROW_REDIS_URL is parsed at load by every command, migrate included,
// and its error never quotes the password.
func TestConfigRedisURL(t *testing.T) {
	const name, pw = "FURROW_REDIS_URL", "s3cr3t-pw"
	checkRefused(t, []badSetting{
		{one(name, "notaurl"), name, []string{"not a Redis URL"}},
		{one(name, "http://127.0.0.1:6379"), name, nil},
		{one(name, "redis://:"+pw+"@127.0.0.1:6379/notadb"), name, nil},
		{one(name, "redis://:"+pw+"%zz@127.0.0.1:6379/0"), name, nil},
	}, pw)
	checkAccepted(t, []map[string]string{
		one(name, "redis://127.0.0.1:6379/9"), one(name, "rediss://:pw@redis.internal:6380/0"), one(name, "redis://redis"),
	})
	// Were the URL not checked at load, migrate would get as far as this
	// database, which refuses connections.
	e := env(map[string]string{name: "notaurl", "FURROW_DATABASE_URL": closedPostgres(t), "FURROW_CONNECT_TIMEOUT": "200ms"})
	err := run(context.Background(), []string{"migrate"}, e, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.HasPrefix(err.Error(), name+": ") {
		t.Errorf("furrow migrate with FURROW_REDIS_URL=notaurl: %v; want the setting's error", err)
	}
}

// Two listeners on one port are refused at load, naming both settings:
// metrics and the profiler are never served on the API port.
func TestConfigListenersApart(t *testing.T) {
	const (
		api     = "FURROW_HTTP_ADDR"
		metrics = "FURROW_METRICS_ADDR"
		pprof   = "FURROW_PPROF_ADDR"
	)
	both := func(a, b string) []string { return []string{a, b, "same port"} }
	checkRefused(t, []badSetting{
		{one(metrics, ":8080"), api, both(api, metrics)},
		{one(metrics, "0.0.0.0:8080"), api, both(`":8080"`, `"0.0.0.0:8080"`)},
		{one(metrics, "127.0.0.1:8080"), api, both(api, metrics)},
		{one(api, "127.0.0.1:9464"), api, both(api, metrics)},
		{map[string]string{api: "[::]:9000", metrics: "127.0.0.1:9000"}, api, both(api, metrics)},
		{map[string]string{api: "localhost:9000", metrics: "127.0.0.1:9000"}, api, both(api, metrics)},
		{map[string]string{api: "[::ffff:127.0.0.1]:9000", metrics: "127.0.0.1:9000"}, api, both(api, metrics)},
		{map[string]string{api: ":80", metrics: ":http"}, api, both(api, metrics)},
		{one(pprof, "localhost:8080"), api, both(api, pprof)},
		{one(pprof, ":9464"), metrics, both(metrics, pprof)},
	}, "")
	checkAccepted(t, []map[string]string{
		{api: ":0", metrics: ":0", pprof: "127.0.0.1:0"},
		{api: "127.0.0.1:8080", metrics: "127.0.0.2:8080"},
		{api: ":9464", metrics: "off"},
		{api: ":8080", metrics: ":9464", pprof: "127.0.0.1:6060"},
	})
}

// FURROW_RETRY_SCHEDULE is bounded: its chains fit in the attempt log, and
// it has at most maxRetryDelays delays; each error names the bound.
func TestConfigRetryScheduleBounds(t *testing.T) {
	const name = "FURROW_RETRY_SCHEDULE"
	repeat := func(d string, n int) string { return strings.TrimSuffix(strings.Repeat(d+",", n), ",") }
	checkRefused(t, []badSetting{
		{one(name, "721h"), name, []string{"695h59m40s", "30 days"}},
		{one(name, "30s,700h"), name, []string{"695h59m30s", "30 days"}},
		{one(name, "2562047h,2562047h"), name, []string{"30 days"}},
		{one(name, repeat("1s", maxRetryDelays+1)), name, []string{"101 delays", "at most 100"}},
	}, "")
	checkAccepted(t, []map[string]string{
		one(name, "695h59m40s"), one(name, "30s,2m,10m,30m,2h,6h,12h"), one(name, repeat("1s", maxRetryDelays)),
	})
}

// FURROW_TRUSTED_PROXIES unset or empty is the default; "," trusts no
// proxy.
func TestConfigTrustNoProxy(t *testing.T) {
	for in, want := range map[string]int{"": 2, ",": 0, " , ": 0} {
		c, err := loadConfig(env(one("FURROW_TRUSTED_PROXIES", in)))
		if err != nil || len(c.TrustedProxies) != want {
			t.Errorf("FURROW_TRUSTED_PROXIES=%q: %v, %v; want %d prefixes", in, c.TrustedProxies, err, want)
		}
	}
}

// GOGC is checked as the runtime reads it, which takes a malformed value
// for 100 without a word.
func TestConfigGOGC(t *testing.T) {
	checkRefused(t, []badSetting{{one("GOGC", "400%"), "GOGC", []string{`"400%"`}}, {one("GOGC", "OFF"), "GOGC", nil}}, "")
	checkAccepted(t, []map[string]string{one("GOGC", "400"), one("GOGC", "off"), one("GOGC", "-1"), one("GOGC", "")})
}
