package main

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
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
