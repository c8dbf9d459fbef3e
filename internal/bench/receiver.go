package bench

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/furrowhq/furrow/internal/loopback"
	"github.com/furrowhq/furrow/webhook"
)

// Receiver is an HTTPS webhook endpoint on loopback that verifies each
// delivery's signature and notes when each reading's event first arrived.
// A reading's value begins with the tag of the turn that sent it and a
// dash ("t3-1021"), so that one receiver serves the turns of a run alike:
// an event of an earlier turn that arrives late counts for its own turn,
// never for the one under way.
type Receiver struct {
	URL    string
	CAFile string // PEM of its self-signed certificate
	srv    *http.Server
	secret atomic.Pointer[string]

	mu       sync.Mutex
	arrivals map[string]time.Time // reading value -> first arrival
	seen     map[string]bool      // event ids
	turns    map[string]*turnCount
	rejected int64
}

// turnCount is what one turn's events did at the receiver.
type turnCount struct {
	received int64 // distinct events
	dups     int64 // events received again
}

// turnOf returns the tag a reading's value begins with.
func turnOf(value string) string {
	tag, _, _ := strings.Cut(value, "-")
	return tag
}

// turnValue returns the value of reading i of the turn tagged tag.
func turnValue(tag string, i int64) string { return tag + "-" + strconv.FormatInt(i, 10) }

// receiverCert and receiverKey are the file names in a certificate
// directory.
const (
	receiverCert = "receiver.pem"
	receiverKey  = "receiver-key.pem"
)

// StartReceiver listens on a free loopback port with the certificate kept in
// certDir, creating a self-signed one for 127.0.0.1 if none is there yet.
func StartReceiver(certDir string) (*Receiver, error) {
	cert, err := loadOrCreateCert(certDir)
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	r := &Receiver{
		URL: "https://" + ln.Addr().String() + "/hook", CAFile: filepath.Join(certDir, receiverCert),
		arrivals: map[string]time.Time{}, seen: map[string]bool{}, turns: map[string]*turnCount{},
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// SetSecret sets the webhook secret deliveries are verified with.
func (r *Receiver) SetSecret(s string) { r.secret.Store(&s) }

// Close stops the receiver.
func (r *Receiver) Close() error { return r.srv.Close() }

// ServeHTTP acknowledges a verified delivery at once, as Furrow asks of
// receivers, and records it.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	secret := r.secret.Load()
	if secret == nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	var env struct {
		ID   string `json:"id"`
		Data struct {
			Value string `json:"value"`
		} `json:"data"`
	}
	status := http.StatusNoContent
	body, err := webhook.VerifyRequest(req, *secret)
	if err != nil {
		status = webhook.Status(err)
	} else if json.Unmarshal(body, &env) != nil || env.ID == "" {
		status = http.StatusBadRequest
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if status != http.StatusNoContent {
		r.rejected++
		w.WriteHeader(status)
		return
	}
	tag := turnOf(env.Data.Value)
	tc := r.turns[tag]
	if tc == nil {
		tc = &turnCount{}
		r.turns[tag] = tc
	}
	if r.seen[env.ID] {
		tc.dups++
	} else {
		r.seen[env.ID] = true
		tc.received++
		if _, ok := r.arrivals[env.Data.Value]; !ok {
			r.arrivals[env.Data.Value] = now
		}
	}
	w.WriteHeader(status)
}

// arrivalsOf matches sent (reading value -> when it was sent) with the
// arrivals: the latency of each that arrived (never negative: an event can
// beat its own 201 back), how many never arrived, and how many arrived by
// loadEnd.
func (r *Receiver) arrivalsOf(sent map[string]time.Time, loadEnd time.Time) (lat []time.Duration, missing, inLoad int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lat = make([]time.Duration, 0, len(sent))
	for value, at := range sent {
		arrived, ok := r.arrivals[value]
		if !ok {
			missing++
			continue
		}
		lat = append(lat, max(arrived.Sub(at), 0))
		if !arrived.After(loadEnd) {
			inLoad++
		}
	}
	return lat, missing, inLoad
}

// received returns the number of distinct events of the turn tagged tag
// received so far.
func (r *Receiver) received(tag string) int64 {
	return r.turn(tag).received
}

// turn returns what the turn tagged tag did so far.
func (r *Receiver) turn(tag string) turnCount {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tc := r.turns[tag]; tc != nil {
		return *tc
	}
	return turnCount{}
}

// duplicates returns the deliveries received again, so far, of the turns
// tagged tags.
func (r *Receiver) duplicates(tags []string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, tag := range tags {
		if tc := r.turns[tag]; tc != nil {
			n += tc.dups
		}
	}
	return n
}

// rejections returns the number of deliveries rejected so far, of any
// turn: a rejected delivery's value cannot be trusted.
func (r *Receiver) rejections() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rejected
}

// loadOrCreateCert loads the certificate kept in dir, first making a
// self-signed one for loopback if there is none.
func loadOrCreateCert(dir string) (tls.Certificate, error) {
	certFile, keyFile := filepath.Join(dir, receiverCert), filepath.Join(dir, receiverKey)
	cert, err := loopback.LoadCert(certFile, keyFile)
	if err == nil {
		return cert.TLS(), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return tls.Certificate{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	if cert, err = loopback.SelfSigned("furrow bench receiver", 10*365*24*time.Hour); err != nil {
		return tls.Certificate{}, err
	}
	if err := cert.WriteFiles(certFile, keyFile); err != nil {
		return tls.Certificate{}, err
	}
	return cert.TLS(), nil
}
