package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/safehttp"
	"github.com/furrowhq/furrow/webhook"
	"github.com/google/uuid"
)

const secret = "whsec_example_receiver"

func event(id string) []byte {
	b, _ := json.Marshal(webhook.Event{ID: id, Type: "metric.value", FarmID: uuid.NewString(), OccurredAtMs: 1, Data: json.RawMessage(`{"value":"21.5"}`)})
	return b
}

func post(t *testing.T, h http.Handler, secretUsed string, body []byte) int {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/webhooks/furrow", bytes.NewReader(body))
	r.Header.Set(webhook.SignatureHeader, webhook.Sign(secretUsed, time.Now(), body))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestReceiverAcknowledgesDedupesAndPrints(t *testing.T) {
	rc := newReceiver([]string{secret}, quietLog())
	var out bytes.Buffer
	go rc.work(&out)

	first := event("evt_" + uuid.NewString())
	codes := []int{
		post(t, rc, secret, first),
		post(t, rc, secret, first),
		post(t, rc, "whsec_wrong", event("evt_other")),
		post(t, rc, secret, []byte("not json")),
	}
	want := []int{http.StatusNoContent, http.StatusNoContent, http.StatusUnauthorized, http.StatusBadRequest}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("answers = %v, want %v", codes, want)
		}
	}
	rc.stop()
	var ev webhook.Event
	_ = json.Unmarshal(first, &ev)
	if n := strings.Count(out.String(), ev.ID); n != 1 {
		t.Fatalf("event printed %d times, want once:\n%s", n, out.String())
	}
	if strings.Contains(out.String(), "evt_other") {
		t.Fatalf("unverified event printed:\n%s", out.String())
	}
}

func TestReceiverFullQueueAsksForRetry(t *testing.T) {
	rc := newReceiver([]string{secret}, quietLog())
	for i := 0; i < queueSize; i++ {
		rc.queue <- webhook.Event{}
	}
	body := event("evt_" + uuid.NewString())
	if code := post(t, rc, secret, body); code != http.StatusServiceUnavailable {
		t.Fatalf("full queue answered %d, want 503", code)
	}
	<-rc.queue
	if code := post(t, rc, secret, body); code != http.StatusNoContent {
		t.Fatalf("retry after 503 answered %d, want 204 (the event must not count as seen)", code)
	}
}

func TestSeenSetForgetsOldest(t *testing.T) {
	s := newSeenSet(2)
	if !s.add("a") || !s.add("b") || s.add("a") {
		t.Fatal("first adds should be new and a repeat should not")
	}
	s.add("c") // evicts a
	if !s.add("a") {
		t.Fatal("the oldest id should have been forgotten")
	}
	if s.add("c") {
		t.Fatal("a recent id should still be remembered")
	}
}

// An id removed (its work refused with 503) and added again by the retry
// is remembered as recent: the slot it left does not evict it.
func TestSeenSetKeepsAnIdAddedAgain(t *testing.T) {
	s := newSeenSet(3)
	s.add("a")
	s.remove("a")
	s.add("a")
	s.add("b")
	s.add("c") // takes the slot "a" first had
	if s.add("a") {
		t.Fatal("the retried id, among the three most recent, was forgotten")
	}
}

func TestParseFlags(t *testing.T) {
	if _, err := parseFlags(nil, ""); err == nil {
		t.Fatal("missing secret accepted")
	}
	if _, err := parseFlags([]string{"-cert", "c.pem"}, secret); err == nil {
		t.Fatal("-cert without -key accepted")
	}
	if _, err := parseFlags([]string{"-cert", "c", "-key", "k", "-self-signed", "s"}, secret); err == nil {
		t.Fatal("-cert with -self-signed accepted")
	}
	c, err := parseFlags([]string{"-addr", ":9100"}, secret)
	if err != nil || c.addr != ":9100" || !slices.Equal(c.secrets, []string{secret}) || c.path != "/webhooks/furrow" {
		t.Fatalf("parseFlags = %+v, %v", c, err)
	}
	if c, err = parseFlags(nil, " whsec_new, whsec_old ,"); err != nil || !slices.Equal(c.secrets, []string{"whsec_new", "whsec_old"}) {
		t.Fatalf("two secrets: %+v, %v", c.secrets, err)
	}
	if _, err := parseFlags(nil, " , "); err == nil {
		t.Fatal("a list of blanks accepted")
	}
}

// TestReceiverDuringRotation: holding the new and the previous secret, the
// receiver accepts deliveries signed with either and refuses others.
func TestReceiverDuringRotation(t *testing.T) {
	const next = "whsec_example_receiver_next"
	rc := newReceiver([]string{next, secret}, quietLog())
	go rc.work(io.Discard)
	defer rc.stop()
	for i, c := range []struct {
		signer string
		want   int
	}{{secret, http.StatusNoContent}, {next, http.StatusNoContent}, {"whsec_other", http.StatusUnauthorized}} {
		if code := post(t, rc, c.signer, event("evt_rotation_"+strconv.Itoa(i))); code != c.want {
			t.Errorf("signed with %s: %d, want %d", c.signer, code, c.want)
		}
	}
}

// TestSelfSignedTrustedThroughCAFile serves the receiver over HTTPS with a
// generated certificate and delivers to it with the service's client
// trusting the written PEM file, as FURROW_WEBHOOK_CA_FILE would.
func TestSelfSignedTrustedThroughCAFile(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	cert, err := selfSigned(caFile)
	if err != nil {
		t.Fatal(err)
	}
	rc := newReceiver([]string{secret}, quietLog())
	var out bytes.Buffer
	go rc.work(&out)
	srv := httptest.NewUnstartedServer(rc)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()

	client, err := safehttp.New(safehttp.Options{AllowPrivate: true, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	body := event("evt_" + uuid.NewString())
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/furrow", bytes.NewReader(body))
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, time.Now(), body))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("HTTPS delivery: %v", err)
	}
	resp.Body.Close()
	srv.Close()
	rc.stop()
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(out.String(), "metric.value") {
		t.Fatalf("status %d, output %q", resp.StatusCode, out.String())
	}
}
