package bench

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/furrowhq/furrow/webhook"
)

func TestReceiverVerifiesAndRecords(t *testing.T) {
	dir := t.TempDir()
	rcv, err := StartReceiver(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	rcv.SetSecret("whsec_test")
	pem, err := os.ReadFile(rcv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatal("receiver.pem holds no certificate")
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	post := func(secret string, body []byte) int {
		req, _ := http.NewRequest("POST", rcv.URL, bytes.NewReader(body))
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, time.Now(), body))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	body := []byte(`{"id":"evt_1","type":"metric.value","data":{"value":"t1-42"}}`)
	if got := post("whsec_test", body); got != http.StatusNoContent {
		t.Fatalf("signed delivery answered %d", got)
	}
	if got := post("whsec_test", body); got != http.StatusNoContent {
		t.Fatalf("repeated delivery answered %d", got)
	}
	if got := post("whsec_wrong", body); got < 400 {
		t.Fatalf("badly signed delivery answered %d", got)
	}
	if got := post("whsec_test", []byte(`not json`)); got != http.StatusBadRequest {
		t.Fatalf("malformed body answered %d", got)
	}
	// Another turn's event counts for that turn alone.
	if got := post("whsec_test", []byte(`{"id":"evt_2","type":"metric.value","data":{"value":"t2-42"}}`)); got != http.StatusNoContent {
		t.Fatalf("second turn's delivery answered %d", got)
	}
	if t1, t2 := rcv.turn("t1"), rcv.turn("t2"); t1 != (turnCount{received: 1, dups: 1}) || t2 != (turnCount{received: 1}) {
		t.Errorf("turn t1 %+v, t2 %+v; want one event each and t1's twice", t1, t2)
	}
	// t1's event again, later: the run's count of its turns sees it.
	if got := post("whsec_test", body); got != http.StatusNoContent {
		t.Fatalf("repeated delivery answered %d", got)
	}
	if n := rcv.duplicates([]string{"t1", "t2", "t3"}); n != 2 {
		t.Errorf("duplicates of t1 to t3 = %d, want t1's two", n)
	}
	rcv.mu.Lock()
	_, arrived := rcv.arrivals["t1-42"]
	rcv.mu.Unlock()
	if !arrived || rcv.received("t3") != 0 || rcv.rejections() != 2 {
		t.Errorf("t1-42 arrived %v, t3 received %d, rejected %d", arrived, rcv.received("t3"), rcv.rejections())
	}
	// A second receiver reuses the certificate the first one made.
	again, err := StartReceiver(dir)
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if pem2, _ := os.ReadFile(again.CAFile); !bytes.Equal(pem, pem2) {
		t.Error("certificate was not reused")
	}
}
