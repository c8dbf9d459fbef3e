package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/keyring"
	"github.com/furrowhq/furrow/store"
)

// CheckKeyRing refuses a ring holding another key under an id that sealed
// stored secrets, whether the id is the first key's (ErrPrimaryMismatch)
// or another's (ErrKeyMismatch), and names the ids of stored secrets'
// keys the ring lacks.
func TestCheckKeyRing(t *testing.T) {
	ctx := context.Background()
	plain, url := newDB(t, newClock())
	f := newFixture(t, plain)
	sealableWebhook(t, plain, f.farm.ID) // unsealed: never missing
	check := func(ring *keyring.Ring) ([]string, error) {
		db, _ := openOn(t, url, ring)
		return db.CheckKeyRing(ctx)
	}
	if missing, err := check(ringOf(t, "k1", 9)); err != nil || missing != nil {
		t.Fatalf("nothing sealed yet: %v, %v; want any ring accepted", missing, err)
	}

	k1, _ := openOn(t, url, ringOf(t, "k1", 1))
	w := sealableWebhook(t, k1, f.farm.ID)
	k0, _ := openOn(t, url, ringOf(t, "k0", 7, "k1", 1))
	rotate(t, k0, w, time.Hour) // k0 seals the current secret, k1's is the previous
	for _, c := range []struct {
		name    string
		ring    *keyring.Ring
		missing []string
		err     error
	}{
		{"the keys that sealed", ringOf(t, "k1", 1, "k0", 7), nil, nil},
		{"a new first key", ringOf(t, "k2", 2, "k1", 1, "k0", 7), nil, nil},
		{"a key dropped", ringOf(t, "k2", 2, "k1", 1), []string{"k0"}, nil},
		{"no ring", nil, []string{"k0", "k1"}, nil},
		{"another first key under a used id", ringOf(t, "k1", 9, "k0", 7), nil, store.ErrPrimaryMismatch},
		{"another key under a used id", ringOf(t, "k2", 2, "k1", 9), []string{"k0"}, store.ErrKeyMismatch},
	} {
		missing, err := check(c.ring)
		if !slices.Equal(missing, c.missing) || !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
			t.Errorf("%s: missing %v, %v; want %v, %v", c.name, missing, err, c.missing, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), `"k1"`) {
			t.Errorf("%s: %v does not name the key id k1", c.name, err)
		}
	}
	if _, err := check(ringOf(t, "k2", 2, "k1", 9)); errors.Is(err, store.ErrPrimaryMismatch) {
		t.Errorf("a key behind the first reported as the first: %v", err)
	}
}
