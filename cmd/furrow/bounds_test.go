package main

import (
	"strings"
	"testing"
	"time"
)

func TestBoundsDefaultsAndChecks(t *testing.T) {
	c, err := loadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Bounds{ReadHeader: 5 * time.Second, Read: 15 * time.Second, Write: 15 * time.Second, Idle: time.Minute,
		Request: 5 * time.Second, Connect: 3 * time.Second, DeadConn: 10 * time.Second,
		Limiter: 250 * time.Millisecond, LimiterBreaker: 5 * time.Second}
	if c.Bounds != want {
		t.Fatalf("bounds %+v, want %+v", c.Bounds, want)
	}
	for name, vars := range map[string]map[string]string{
		"FURROW_HTTP_READ_TIMEOUT": {"FURROW_HTTP_READ_TIMEOUT": "0s"},
		"FURROW_REQUEST_TIMEOUT":   {"FURROW_REQUEST_TIMEOUT": "20s"},
		"FURROW_RATELIMIT_TIMEOUT": {"FURROW_RATELIMIT_TIMEOUT": "6s"},
		"FURROW_DEAD_CONN_TIMEOUT": {"FURROW_DEAD_CONN_TIMEOUT": "soon"},
	} {
		if _, err := loadConfig(env(vars)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: err = %v, want one naming %s", vars, err, name)
		}
	}
}
