package activities_test

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
)

// rawEndpoint answers every request with answer, written as is, and
// returns a store holding a webhook of it.
func rawEndpoint(t *testing.T, answer string) (*store, *activities.Activities) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for line := ""; line != "\r\n"; {
					if line, err = r.ReadString('\n'); err != nil {
						return
					}
				}
				_, _ = c.Write([]byte(answer))
			}()
		}
	}()
	s := newStore(t, furrow.Webhook{ID: uuid.New(), URL: "http://" + ln.Addr().String() + "/hook", Secret: secret, Enabled: true},
		furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventMetricValue, OccurredAtMs: 1714564800000, Data: []byte(`{}`)})
	return s, &activities.Activities{Webhooks: s, Clock: furrow.ClockFunc(time.Now)}
}

// wantRetriedWithoutAnswer checks that err is a retried attempt and that
// its row records no answer, with an error text starting with prefix.
func wantRetriedWithoutAnswer(t *testing.T, s *store, err error, prefix string) furrow.Attempt {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.NonRetryable() {
		t.Fatalf("error %v, want a retried attempt", err)
	}
	row := s.attempts()[0]
	if row.StatusCode != 0 || !strings.HasPrefix(row.Error, prefix) {
		t.Fatalf("row status %d error %.120q, want no answer and %q", row.StatusCode, row.Error, prefix)
	}
	return row
}

func TestDeliverBoundsTheErrorTextOfAMalformedAnswer(t *testing.T) {
	// Go's error quotes the malformed status line it read.
	s, acts := rawEndpoint(t, "GARBAGE"+strings.Repeat("A", 60<<10)+"\r\n\r\n")
	_, err := deliver(t, s, acts, 1)
	row := wantRetriedWithoutAnswer(t, s, err, "connection failed: ")
	if len(row.Error) > furrow.MaxAttemptError {
		t.Fatalf("stored %d bytes of error text, want at most %d", len(row.Error), furrow.MaxAttemptError)
	}
	if len(err.Error()) > 2*activities.MaxErrorText {
		t.Fatalf("activity error of %d bytes", len(err.Error()))
	}
}

func TestDeliverStatusOutsideHTTPRangeIsAMalformedAnswer(t *testing.T) {
	for _, code := range []string{"600", "999", "000"} {
		t.Run(code, func(t *testing.T) {
			s, acts := rawEndpoint(t, "HTTP/1.1 "+code+" Odd\r\nContent-Length: 0\r\n\r\n")
			_, err := deliver(t, s, acts, 1)
			row := wantRetriedWithoutAnswer(t, s, err, "connection failed: ")
			if !strings.HasSuffix(row.Error, "status code "+code) {
				t.Fatalf("error text %q does not name the status", row.Error)
			}
		})
	}
}
