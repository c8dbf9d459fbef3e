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
