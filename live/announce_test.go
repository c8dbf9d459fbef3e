package live_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/live"
)

// A subscription whose farm could not be announced is not confirmed, as
// other processes may not know the farm is watched and send nothing of it:
// the client gets the bus's error, then subscribed once an announcement
// is published.
func TestUnannouncedSubscriptionIsNotConfirmed(t *testing.T) {
	ctx := t.Context()
	admin := testenv.Redis(t)
	// A Redis user that may subscribe but not publish: the SUBSCRIBE is
	// confirmed, the announcement's PUBLISH refused.
	user, pass := "furrow-test-"+uuid.NewString(), uuid.NewString()
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">"+pass, "allkeys", "allchannels", "+@all", "-publish").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	opt, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	opt.Username, opt.Password = user, pass
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	w := newWorld(t, redisBus(t, c, testPrefix()), live.Deps{})
	topic := live.FarmTopic(w.farmA)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(dctx, w.url(topic), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + w.aliceToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if m := readWithin(t, ws, 10*time.Second); m.Type != "error" || m.Topic != topic.String() || m.Error != "internal_error" {
		t.Fatalf("got %+v with the announcement refused, want the bus's error", m)
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "+publish").Err(); err != nil {
		t.Fatal(err)
	}
	if m := readWithin(t, ws, 10*time.Second); m.Type != "subscribed" || m.Topic != topic.String() {
		t.Fatalf("got %+v once announcing works, want subscribed", m)
	}
}
