package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// newSecret returns prefix followed by 32 random bytes in unpadded
// base64url, and the SHA-256 hash that is stored in its place.
func newSecret(prefix string) (string, []byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails.
	s := prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return s, hashSecret(s)
}

// hashSecret is the stored form of a key or token. The keys carry 256
// random bits, so an unsalted fast hash is enough to make a leaked table
// useless.
func hashSecret(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
