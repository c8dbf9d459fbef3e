// Package keyring seals small secrets at rest with AES-256-GCM under a ring
// of named keys: the first key seals, every key opens, so a new key can be
// put in front and the values re-sealed while the old key still opens what
// it sealed. Errors name key ids and positions, never key material.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// KeySize is the length of every key: AES-256.
const KeySize = 32

// nonceSize is the standard GCM nonce length; nonces are random, which is
// safe for far more values than a ring ever seals under one key.
const nonceSize = 12

// validID is what a key id may look like: it is stored beside every sealed
// value and shown in errors, so it is short and plain.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

// ErrUnknownKey is returned by Open for a value sealed with a key the ring
// does not hold.
var ErrUnknownKey = errors.New("keyring: the value was sealed with a key the ring does not hold")

// ErrOpen is returned by Open for a value that does not authenticate under
// its key and additional data: altered, truncated, or bound to other data.
var ErrOpen = errors.New("keyring: the sealed value does not open (altered, or bound to other data)")

// Ring is a parsed key ring. It is safe for concurrent use.
type Ring struct {
	ids   []string
	aeads map[string]cipher.AEAD
}

// Parse reads a ring written as id:base64key[,id:base64key...], where each
// key is the standard (or URL-safe) base64 of KeySize bytes. Spaces around
// entries are ignored.
func Parse(s string) (*Ring, error) {
	r := &Ring{aeads: map[string]cipher.AEAD{}}
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("the key ring is empty; write id:base64key[,id:base64key...]")
	}
	for i, entry := range strings.Split(s, ",") {
		id, key, err := parseEntry(strings.TrimSpace(entry), i+1)
		if err != nil {
			return nil, err
		}
		if _, dup := r.aeads[id]; dup {
			return nil, fmt.Errorf("key %d: id %q appears twice", i+1, id)
		}
		if err := r.add(id, key); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// parseEntry reads the n-th id:base64key entry.
func parseEntry(entry string, n int) (string, []byte, error) {
	id, b64, ok := strings.Cut(entry, ":")
	if !ok {
		return "", nil, fmt.Errorf("key %d: want id:base64key", n)
	}
	if !validID.MatchString(id) {
		return "", nil, fmt.Errorf("key %d: the id must be 1 to 32 letters, digits, '_', '.' or '-', starting with a letter or digit", n)
	}
	key, err := decodeKey(strings.TrimSpace(b64))
	if err != nil {
		return "", nil, fmt.Errorf("key %d (%q): the key is not base64", n, id)
	}
	if len(key) != KeySize {
		return "", nil, fmt.Errorf("key %d (%q): the key is %d bytes, want %d", n, id, len(key), KeySize)
	}
	return id, key, nil
}

// decodeKey accepts standard and URL-safe base64, padded or not.
func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

func (r *Ring) add(id string, key []byte) error {
	block, err := aes.NewCipher(key)
	if err != nil {
		return fmt.Errorf("key %q: %w", id, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return fmt.Errorf("key %q: %w", id, err)
	}
	r.ids = append(r.ids, id)
	r.aeads[id] = aead
	return nil
}

// Primary returns the id of the key that seals: the first of the ring.
func (r *Ring) Primary() string { return r.ids[0] }

// IDs returns the ids of the ring's keys, the sealing one first.
func (r *Ring) IDs() []string { return append([]string(nil), r.ids...) }

// Has reports whether the ring holds a key named id.
func (r *Ring) Has(id string) bool {
	_, ok := r.aeads[id]
	return ok
}

// Seal encrypts plaintext under the primary key, bound to aad, and returns
// that key's id and nonce||ciphertext||tag.
func (r *Ring) Seal(plaintext, aad []byte) (keyID string, sealed []byte) {
	id := r.Primary()
	aead := r.aeads[id]
	out := make([]byte, nonceSize, nonceSize+len(plaintext)+aead.Overhead())
	_, _ = rand.Read(out) // crypto/rand.Read never fails.
	return id, aead.Seal(out, out, plaintext, aad)
}

// Open decrypts a value Seal returned under key keyID with the same aad.
// It returns ErrUnknownKey (wrapped, naming the id) when the ring lacks
// the key and ErrOpen when the value does not authenticate.
func (r *Ring) Open(keyID string, sealed, aad []byte) ([]byte, error) {
	aead, ok := r.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("%w (key id %q)", ErrUnknownKey, keyID)
	}
	if len(sealed) < nonceSize+aead.Overhead() {
		return nil, ErrOpen
	}
	out, err := aead.Open(nil, sealed[:nonceSize], sealed[nonceSize:], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}

// NewKey returns a new random key in the base64 form Parse reads.
func NewKey() string {
	var b [KeySize]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails.
	return base64.StdEncoding.EncodeToString(b[:])
}
