package webhook_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/furrowhq/furrow/webhook"
)

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
