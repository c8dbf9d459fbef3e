package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// The /metrics listener keeps answering once the signal has ended the
// command's context, through the drain, and closes only at stop.
func TestMetricsListenerOutlivesTheSignalUntilStop(t *testing.T) {
	var logs bytes.Buffer
	ctx, signal := context.WithCancel(context.Background())
	defer signal()
	obs, err := startObservability(ctx, Config{MetricsAddr: "127.0.0.1:0"}, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + metricsAddr(t, logs.Bytes()) + "/metrics"
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	signal()
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := hc.Get(url)
		if err != nil {
			t.Fatalf("GET /metrics during the drain: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics during the drain = %d", resp.StatusCode)
		}
	}
	obs.stop()
	if resp, err := hc.Get(url); err == nil {
		resp.Body.Close()
		t.Fatal("GET /metrics answered after stop")
	}
}

// metricsAddr returns the address the "metrics listening" record of the
// JSON log names.
func metricsAddr(t *testing.T, log []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(log))
	for dec.More() {
		var rec struct{ Msg, Addr string }
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.Msg == "metrics listening" {
			return rec.Addr
		}
	}
	t.Fatalf("no \"metrics listening\" record in:\n%s", log)
	return ""
}
