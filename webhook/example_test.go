package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/furrowhq/furrow/webhook"
)

// Example is a complete receiver: Middleware verifies every delivery
// before the handler decodes it. A delivery signed with the receiver's
// secret is acknowledged, one signed with another secret is refused.
func Example() {
	const secret = "whsec_example"
	receiver := webhook.Middleware(secret, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev webhook.Event
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			http.Error(w, "body is not an event", http.StatusBadRequest)
			return
		}
		// Queue slow work and return: the answer leaves when the handler
		// does.
		fmt.Println("received", ev.ID, ev.Type)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv := httptest.NewServer(receiver)
	defer srv.Close()

	body := []byte(`{"id":"evt_1","type":"metric.value","farm_id":"5b0f3e8e-6a51-4c3e-9a43-1d2f0c9e7a11","occurred_at_ms":1700000000000,"data":{"value":"21.50"}}`)
	for _, signer := range []string{secret, "whsec_other"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(signer, time.Now(), body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	// Output:
	// received evt_1 metric.value
	// 204
	// 401
}

// The value below was checked with
// printf %s '1700000000000.{"id":"evt_1"}' | openssl dgst -sha256 -hmac whsec_example
func ExampleSign() {
	at := time.UnixMilli(1_700_000_000_000)
	fmt.Println(webhook.Sign("whsec_example", at, []byte(`{"id":"evt_1"}`)))
	// Output: t=1700000000000,v1=95772f6e1599146d79f06c120d05d66c0b16d371972d1886501eb197d4f095e2
}

func ExampleVerify() {
	body := []byte(`{"id":"evt_1"}`)
	sent := time.UnixMilli(1_700_000_000_000)
	header := webhook.Sign("whsec_example", sent, body)

	fmt.Println(webhook.Verify("whsec_example", header, body, sent.Add(time.Minute)))
	err := webhook.Verify("whsec_example", header, body, sent.Add(time.Hour))
	fmt.Println(errors.Is(err, webhook.ErrTooOld))
	err = webhook.Verify("whsec_wrong", header, body, sent)
	fmt.Println(errors.Is(err, webhook.ErrMismatch))
	// Output:
	// <nil>
	// true
	// true
}

// While a secret is rotated, the receiver holds the new and the old one:
// a delivery signed with either verifies.
func ExampleVerifyAny() {
	body := []byte(`{"id":"evt_1"}`)
	sent := time.UnixMilli(1_700_000_000_000)
	secrets := []string{"whsec_new", "whsec_old"}

	fmt.Println(webhook.VerifyAny(secrets, webhook.Sign("whsec_old", sent, body), body, sent))
	fmt.Println(webhook.VerifyAny(secrets, webhook.Sign("whsec_new", sent, body), body, sent))
	err := webhook.VerifyAny(secrets, webhook.Sign("whsec_other", sent, body), body, sent)
	fmt.Println(errors.Is(err, webhook.ErrMismatch))
	// Output:
	// <nil>
	// <nil>
	// true
}

func ExampleVerifyRequest() {
	http.HandleFunc("POST /furrow", func(w http.ResponseWriter, r *http.Request) {
		body, err := webhook.VerifyRequest(r, "whsec_example")
		if err != nil {
			http.Error(w, err.Error(), webhook.Status(err))
			return
		}
		var ev webhook.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, "body is not an event", http.StatusBadRequest)
			return
		}
		// Acknowledge at once; deduplicate on ev.ID and do slow work later.
		w.WriteHeader(http.StatusNoContent)
		log.Printf("event %s of type %s", ev.ID, ev.Type)
	})
}
