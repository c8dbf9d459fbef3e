package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/live"
	"github.com/furrowhq/furrow/store"
)

// On farms/{farm}/events an app event's data is what PostgreSQL stored,
// as webhooks and the events API have it (jsonb orders keys and writes
// numbers out), not as it was posted; the 201 answer has it too.
func TestLiveEventDataAsStored(t *testing.T) {
	ctx := t.Context()
	db, err := store.Open(ctx, testenv.NewDatabase(t, testenv.Migrator{Digest: store.MigrationsDigest(), Migrate: store.Migrate}), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	owner, token, err := db.CreateUser(ctx, "owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := db.CreateFarm(ctx, owner.ID, "North")
	if err != nil {
		t.Fatal(err)
	}
	bus := live.NewMemoryBus(nil)
	liveSrv := live.NewServer(live.Deps{Bus: bus})
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = liveSrv.Shutdown(sctx)
		_ = bus.Close()
	})
	srv := httptest.NewServer(New(Config{}, Deps{Users: db, Farms: db, Devices: db, Readings: db, Events: db,
		Webhooks: db, EventPublisher: bus, Live: liveSrv}))
	t.Cleanup(srv.Close)

	topic := live.EventsTopic(farm.ID)
	c, _, err := dialServer(t, srv, topic, bearerOpts(token))
	if err != nil {
		t.Fatal(err)
	}
	if m := readMessage(t, c); m["type"] != "subscribed" {
		t.Fatalf("got %v, want subscribed", m)
	}
	const posted = `{"b":1,"a":1.5e3}`
	created := callAPI(t, srv, token, "POST", "/api/farms/"+farm.ID.String()+"/events", `{"type":"trigger.fired","data":`+posted+`}`, http.StatusCreated)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, msg, err := c.Read(rctx)
	if err != nil {
		t.Fatal(err)
	}
	var sent furrow.Event
	if err := json.Unmarshal(msg, &sent); err != nil {
		t.Fatalf("live message %s: %v", msg, err)
	}
	var listed []furrow.Event
	if err := json.Unmarshal(callAPI(t, srv, token, "GET", "/api/farms/"+farm.ID.String()+"/events", "", http.StatusOK), &listed); err != nil || len(listed) != 1 {
		t.Fatalf("events list: %v %v", listed, err)
	}
	var answered furrow.Event
	if err := json.Unmarshal(created, &answered); err != nil {
		t.Fatal(err)
	}
	stored := listed[0].Data
	if bytes.Equal(stored, []byte(posted)) {
		t.Fatalf("stored data %s is as posted; the test needs data that jsonb rewrites", stored)
	}
	if !bytes.Equal(sent.Data, stored) {
		t.Errorf("live data %s, want it as stored and listed: %s", sent.Data, stored)
	}
	if !bytes.Equal(answered.Data, stored) {
		t.Errorf("201 data %s, want it as stored and listed: %s", answered.Data, stored)
	}
}

// callAPI sends a management request to srv and returns the body of the
// answer, failing t unless its status is want.
func callAPI(t *testing.T, srv *httptest.Server, token, method, path, body string, want int) []byte {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	return b
}
