package furrow

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// secretBytes is the randomness of every key, token and signing secret.
const secretBytes = 32

// NewDeviceKey returns a new device API key: DeviceKeyPrefix and 256
// random bits in unpadded base64url.
func NewDeviceKey() string { return newSecret(DeviceKeyPrefix, base64.RawURLEncoding) }

// NewUserToken returns a new user bearer token: UserTokenPrefix and 256
// random bits in unpadded base64url, which fits in a WebSocket subprotocol
// (whose tokens exclude "/" and "=").
func NewUserToken() string { return newSecret(UserTokenPrefix, base64.RawURLEncoding) }

// NewWebhookSecret returns a new webhook signing secret in the Standard
// Webhooks format: WebhookSecretPrefix and the standard base64 of 32 random
// bytes. Secrets issued before in other encodings stay valid: signing uses
// the whole secret as given.
func NewWebhookSecret() string { return newSecret(WebhookSecretPrefix, base64.StdEncoding) }

// newSecret is the one generator of secrets.
func newSecret(prefix string, enc *base64.Encoding) string {
	var b [secretBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails.
	return prefix + enc.EncodeToString(b[:])
}

// SecretHash is the stored form of a device key or user token. The secrets
// carry 256 random bits, so an unsalted fast hash is enough to make a
// leaked table useless.
type SecretHash [sha256.Size]byte

// HashSecret returns the SecretHash of s.
func HashSecret(s string) SecretHash { return sha256.Sum256([]byte(s)) }
