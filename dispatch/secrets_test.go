package dispatch_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/dispatch"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/keyring"
	"github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/workflows"
)

// A webhook whose secret this process cannot open (sealed with a key since
// dropped from its ring) does not stop its farm's dispatch: the dispatcher
// reads no secret, so every enabled webhook of the farm gets its delivery
// started, and only the broken one's attempts fail (retried, not lost), in
// their activities.
func TestDispatchDoesNotOpenSecrets(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t, testenv.Migrator{Digest: store.MigrationsDigest(), Migrate: store.Migrate})
	old := openWithKey(t, url, "k1", 1)
	u, _, err := old.CreateUser(ctx, uuid.NewString()+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := old.CreateFarm(ctx, u.ID, "North")
	if err != nil {
		t.Fatal(err)
	}
	hook := func(db *store.DB) furrow.Webhook {
		w, err := db.CreateWebhook(ctx, furrow.Webhook{ID: uuid.New(), FarmID: farm.ID, URL: "https://hooks.example.com/in",
			Secret: furrow.NewWebhookSecret(), Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	broken := hook(old) // sealed with k1
	db := openWithKey(t, url, "k2", 2)
	healthy := hook(db) // sealed with k2
	if _, err := db.WebhookByID(ctx, broken.ID); err == nil {
		t.Fatal("the secret sealed with k1 opened without it")
	}
	e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: farm.ID})
	if err != nil {
		t.Fatal(err)
	}

	starts := &startIDs{}
	d := dispatch.New(dispatch.Config{}, dispatch.Deps{Outbox: db, Webhooks: db, Starter: starts, Logger: slog.New(slog.DiscardHandler)})
	p, err := d.DispatchOnce(ctx)
	if err != nil || p.Dispatched != 1 || p.FailedFarms != 0 {
		t.Fatalf("pass = %+v, %v; want the event dispatched", p, err)
	}
	for _, w := range []furrow.Webhook{healthy, broken} {
		if id := workflows.DeliveryWorkflowID(w.ID, e.ID); !starts.has(id) {
			t.Errorf("no start of %s; started %v", id, starts.ids)
		}
	}
}

// openWithKey opens a store on url whose key ring holds the key id only,
// made of the byte b.
func openWithKey(t *testing.T, url, id string, b byte) *store.DB {
	t.Helper()
	ring, err := keyring.Parse(id + ":" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, keyring.KeySize)))
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), url, store.Options{MaxConns: 4, Keys: ring, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// startIDs is a Starter that starts nothing and keeps the workflow IDs it
// was asked for.
type startIDs struct {
	mu  sync.Mutex
	ids []string
}

func (s *startIDs) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, o.ID)
	return nil, nil
}

func (s *startIDs) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.ids, id)
}
