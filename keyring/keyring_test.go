package keyring_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/furrowhq/furrow/keyring"
)

// key returns a deterministic test key made of byte b.
func key(b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, keyring.KeySize))
}

func TestParse(t *testing.T) {
	k1, k2 := key(1), key(2)
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	cases := []struct {
		name, in string
		ids      []string
		errHas   string
	}{
		{"one key", "k1:" + k1, []string{"k1"}, ""},
		{"two keys, first seals", "new:" + k2 + ",old:" + k1, []string{"new", "old"}, ""},
		{"spaces around entries", " a:" + k1 + " , b:" + k2 + " ", []string{"a", "b"}, ""},
		{"url-safe unpadded key", "k:" + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), []string{"k"}, ""},
		{"empty", "", nil, "empty"},
		{"blank", "  ", nil, "empty"},
		{"no colon", k1, nil, "key 1: want id:base64key"},
		{"empty id", ":" + k1, nil, "key 1: the id must be"},
		{"bad id", "k 1:" + k1, nil, "key 1: the id must be"},
		{"id too long", strings.Repeat("a", 33) + ":" + k1, nil, "key 1: the id must be"},
		{"bad base64", "k1:" + k1 + ",k2:not*base64", nil, `key 2 ("k2"): the key is not base64`},
		{"short key", "k1:" + short, nil, `key 1 ("k1"): the key is 16 bytes, want 32`},
		{"duplicate id", "k1:" + k1 + ",k1:" + k2, nil, `key 2: id "k1" appears twice`},
		{"empty entry", "k1:" + k1 + ",", nil, "key 2: want id:base64key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := keyring.Parse(c.in)
			if c.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("Parse error = %v, want one containing %q", err, c.errHas)
				}
				for _, secret := range []string{k1, k2, short, "not*base64"} {
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("the error %q echoes key material", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.IDs(); strings.Join(got, ",") != strings.Join(c.ids, ",") || r.Primary() != c.ids[0] {
				t.Fatalf("ids %v primary %q, want %v", got, r.Primary(), c.ids)
			}
		})
	}
}

func mustParse(t *testing.T, s string) *keyring.Ring {
	t.Helper()
	r, err := keyring.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealOpen(t *testing.T) {
	old := mustParse(t, "old:"+key(1))
	both := mustParse(t, "new:"+key(2)+",old:"+key(1))
	onlyNew := mustParse(t, "new:"+key(2))
	secret, aad := []byte("whsec_c2VjcmV0"), []byte("webhook 1")

	id, sealed := old.Seal(secret, aad)
	if id != "old" || bytes.Contains(sealed, secret) {
		t.Fatalf("sealed with %q: %x", id, sealed)
	}
	if _, again := old.Seal(secret, aad); bytes.Equal(again, sealed) {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
	for name, r := range map[string]*keyring.Ring{"same ring": old, "ring with a new key first": both} {
		got, err := r.Open(id, sealed, aad)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("%s: Open = %q, %v", name, got, err)
		}
	}
	if id2, _ := both.Seal(secret, aad); id2 != "new" {
		t.Fatalf("the ring seals with %q, want its first key", id2)
	}

	if _, err := onlyNew.Open(id, sealed, aad); !errors.Is(err, keyring.ErrUnknownKey) || !strings.Contains(err.Error(), `"old"`) {
		t.Errorf("open with the key dropped: %v, want ErrUnknownKey naming it", err)
	}
	if _, err := old.Open(id, sealed, []byte("webhook 2")); !errors.Is(err, keyring.ErrOpen) {
		t.Errorf("open bound to other data: %v, want ErrOpen", err)
	}
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x40
		if _, err := old.Open(id, bad, aad); !errors.Is(err, keyring.ErrOpen) {
			t.Fatalf("byte %d altered: %v, want ErrOpen", i, err)
		}
	}
	for _, n := range []int{0, 5, len(sealed) - 1} {
		if _, err := old.Open(id, sealed[:n], aad); !errors.Is(err, keyring.ErrOpen) {
			t.Errorf("truncated to %d: %v, want ErrOpen", n, err)
		}
	}
	wrong := mustParse(t, "old:"+key(9))
	if _, err := wrong.Open(id, sealed, aad); !errors.Is(err, keyring.ErrOpen) {
		t.Errorf("open with another key under the same id: %v, want ErrOpen", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	r := mustParse(t, "k:"+key(3))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			aad := []byte{byte(i)}
			for range 200 {
				id, s := r.Seal([]byte("x"), aad)
				if got, err := r.Open(id, s, aad); err != nil || string(got) != "x" {
					t.Errorf("round trip: %q, %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestNewKey(t *testing.T) {
	a, b := keyring.NewKey(), keyring.NewKey()
	if a == b {
		t.Fatal("two new keys are equal")
	}
	if _, err := keyring.Parse("dev:" + a); err != nil {
		t.Fatalf("a new key does not parse: %v", err)
	}
}
