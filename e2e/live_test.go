package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/furrowhq/furrow/internal/testenv"
)

// liveMessage is any message of GET /api/live: a data message (Reading
// JSON plus farm_id and topic, or an event envelope, with an id) or a
// control message (with a type and no id).
type liveMessage struct {
	ID        string
	Type      string
	Topic     string
	Error     string
	Reason    string
	DeviceID  string `json:"device_id"`
	MetricID  int    `json:"metric_id"`
	Value     string
	Timestamp string // a JSON number here would fail to decode
	FarmID    string `json:"farm_id"`
}

// liveClient is a WebSocket client of /api/live whose messages are read
// in the background.
type liveClient struct {
	conn *websocket.Conn
	msgs chan liveMessage
	errs chan error
}

// liveURL returns the WebSocket address of /api/live on base with topics.
func liveURL(base string, topics ...string) string {
	q := url.Values{"topic": topics}
	return "ws" + strings.TrimPrefix(base, "http") + "/api/live?" + q.Encode()
}

// dialLive opens a WebSocket to /api/live authenticated by the
// Authorization header. On a refused handshake it returns the response.
func dialLive(t *testing.T, base, token string, topics ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, liveURL(base, topics...), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
		HTTPClient: checked(t, nil),
	})
	if err == nil {
		t.Cleanup(func() { conn.CloseNow() })
	}
	return conn, resp, err
}

// newLiveClient connects, starts reading and waits until every topic is
// confirmed live.
func newLiveClient(t *testing.T, base, token string, topics ...string) *liveClient {
	t.Helper()
	conn, resp, err := dialLive(t, base, token, topics...)
	if err != nil {
		t.Fatalf("dial /api/live: %v (response %v)", err, resp)
	}
	c := &liveClient{conn: conn, msgs: make(chan liveMessage, 1024), errs: make(chan error, 1)}
	go c.readLoop()
	for range topics {
		if m := c.next(t, 10*time.Second); m.Type != "subscribed" {
			t.Fatalf("first messages should confirm the topics, got %+v", m)
		}
	}
	return c
}

func (c *liveClient) readLoop() {
	for {
		_, b, err := c.conn.Read(context.Background())
		if err != nil {
			c.errs <- err
			return
		}
		var m liveMessage
		if err := json.Unmarshal(b, &m); err != nil {
			c.errs <- fmt.Errorf("message %s: %w", b, err)
			return
		}
		c.msgs <- m
	}
}

// next returns the next message, failing t when none comes within limit
// or the connection ends.
func (c *liveClient) next(t *testing.T, limit time.Duration) liveMessage {
	t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case err := <-c.errs:
		t.Fatalf("live connection ended: %v", err)
	case <-time.After(limit):
		t.Fatalf("no live message within %s", limit)
	}
	return liveMessage{}
}

// send writes one client message (subscribe or unsubscribe).
func (c *liveClient) send(t *testing.T, typ, topic string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"type": typ, "topic": topic})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("write %s: %v", b, err)
	}
}

// storedReading is the reading endpoint's answer.
type storedReading struct {
	DeviceID  string `json:"device_id"`
	MetricID  int    `json:"metric_id"`
	Value     string
	Timestamp string
}

// postTo stores one reading on f with the device key and returns the row.
func postTo(t *testing.T, f *furrow, key, device string, metric int, value any) storedReading {
	t.Helper()
	body := map[string]any{"device_id": device, "metric_id": metric, "value": value}
	r := do(t, nil, "POST", f.URL+"/api/metric-values", body, bearer(key)...)
	expect(t, r, 201, "")
	var s storedReading
	r.JSON(t, &s)
	return s
}

// collect reads n data messages and returns them in arrival order.
// Control messages fail t.
func (c *liveClient) collect(t *testing.T, n int) []liveMessage {
	t.Helper()
	var got []liveMessage
	for len(got) < n {
		m := c.next(t, 15*time.Second)
		if m.Type != "" {
			t.Fatalf("unexpected control message %+v", m)
		}
		got = append(got, m)
	}
	return got
}

// sameReading fails t unless m carries the stored reading s of farm.
func sameReading(t *testing.T, m liveMessage, s storedReading, farm string) {
	t.Helper()
	if m.DeviceID != s.DeviceID || m.MetricID != s.MetricID || m.Value != s.Value || m.Timestamp != s.Timestamp || m.FarmID != farm {
		t.Fatalf("live message %+v, want stored %+v of farm %s", m, s, farm)
	}
}

func TestLiveAcrossInstances(t *testing.T) {
	testenv.SkipShort(t, "several furrow processes with a Temporal server")
	db := newDatabase(t)
	env := newTemporal(t).env()
	env["FURROW_DATABASE_URL"] = db
	env["FURROW_REDIS_URL"] = testenv.RedisURL(t)
	a := start(t, "serve", env)
	b := start(t, "serve", env)
	fx := newFixture(t, a, db)
	other, otherKey := newDevice(t, a, fx)
	farmTopic := "farms/" + fx.FarmID + "/readings"
	deviceTopic := fmt.Sprintf("farms/%s/devices/%s/metrics/220", fx.FarmID, fx.DeviceID)

	t.Run("readings posted to A reach B in order, on their topics only", func(t *testing.T) {
		farmC := newLiveClient(t, b.URL, fx.Token, farmTopic)
		deviceC := newLiveClient(t, b.URL, fx.Token, deviceTopic)
		// One socket on both topics gets each reading once.
		both := newLiveClient(t, b.URL, fx.Token, farmTopic, deviceTopic)
		var all, mine []storedReading
		for i := range 8 {
			s := postTo(t, a, fx.Key, fx.DeviceID, 220, fmt.Sprintf("%d.5", 40+i))
			all, mine = append(all, s), append(mine, s)
			// Readings of another device and of another metric belong to
			// the farm topic only.
			switch i {
			case 2:
				all = append(all, postTo(t, a, otherKey, other, 220, 12))
			case 5:
				all = append(all, postTo(t, a, fx.Key, fx.DeviceID, 221, "dry"))
			}
		}
		for i, m := range farmC.collect(t, len(all)) {
			sameReading(t, m, all[i], fx.FarmID)
		}
		// Any reading wrongly sent to the device topic would shift this
		// sequence, since the last one posted belongs to it.
		for i, m := range deviceC.collect(t, len(mine)) {
			sameReading(t, m, mine[i], fx.FarmID)
		}
		// A duplicate would shift this sequence too.
		for i, m := range both.collect(t, len(all)) {
			sameReading(t, m, all[i], fx.FarmID)
		}
	})

	t.Run("a user of another farm gets 403 on B", func(t *testing.T) {
		_, stranger := createUser(t, db, fmt.Sprintf("stranger-%d@example.com", time.Now().UnixNano()))
		expect(t, do(t, nil, "POST", b.URL+"/api/farms", map[string]string{"name": "South field"}, bearer(stranger)...), 201, "")
		for _, topic := range []string{farmTopic, deviceTopic} {
			_, resp, err := dialLive(t, b.URL, stranger, topic)
			if err == nil || resp == nil {
				t.Fatalf("stranger subscribed to %s (err %v)", topic, err)
			}
			body, _ := io.ReadAll(resp.Body)
			expect(t, response{Status: resp.StatusCode, Header: resp.Header, Body: body}, 403, "forbidden")
		}
		_, resp, err := dialLive(t, b.URL, "fut_unknown", farmTopic)
		if err == nil || resp == nil || resp.StatusCode != 401 {
			t.Fatalf("unknown token: err %v, response %v", err, resp)
		}
	})

	t.Run("a forbidden subscribe message leaves the connection working", func(t *testing.T) {
		var nb fixture
		nb.UserID, nb.Token = createUser(t, db, fmt.Sprintf("neighbour-%d@example.com", time.Now().UnixNano()))
		r := do(t, nil, "POST", b.URL+"/api/farms", map[string]string{"name": "East field"}, bearer(nb.Token)...)
		expect(t, r, 201, "")
		var farm struct{ ID string }
		r.JSON(t, &farm)
		nb.FarmID = farm.ID
		nb.DeviceID, nb.Key = newDevice(t, b, nb)

		c := newLiveClient(t, b.URL, nb.Token)
		c.send(t, "subscribe", farmTopic)
		if m := c.next(t, 10*time.Second); m.Type != "error" || m.Error != "forbidden" || m.Topic != farmTopic {
			t.Fatalf("subscribe to another farm answered %+v", m)
		}
		own := "farms/" + nb.FarmID + "/readings"
		c.send(t, "subscribe", own)
		if m := c.next(t, 10*time.Second); m.Type != "subscribed" || m.Topic != own {
			t.Fatalf("after the refusal got %+v", m)
		}
		// The owner's reading is posted first; the neighbour must see only
		// their own.
		postTo(t, a, fx.Key, fx.DeviceID, 220, 1)
		s := postTo(t, a, nb.Key, nb.DeviceID, 220, 2)
		sameReading(t, c.collect(t, 1)[0], s, nb.FarmID)
	})

	t.Run("a socket that never reads does not hold back a fast one", func(t *testing.T) {
		// The stuck socket is opened first and never read; the fast one
		// must still see every reading.
		if _, resp, err := dialLive(t, b.URL, fx.Token, farmTopic); err != nil {
			t.Fatalf("stuck client: %v (%v)", err, resp)
		}
		c := newLiveClient(t, b.URL, fx.Token, farmTopic)
		var posted []storedReading
		for i := range 60 {
			posted = append(posted, postTo(t, a, otherKey, other, 220, strings.Repeat("9", 500+i)))
		}
		for i, m := range c.collect(t, len(posted)) {
			sameReading(t, m, posted[i], fx.FarmID)
		}
	})
}
