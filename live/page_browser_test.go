package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/internal/testenv/testbrowser"
	"github.com/furrowhq/furrow/live"
)

// The /live page connected again, to another topic, shows the new
// socket's status and readings only: the old socket's close, and a
// message it delivers late, reach neither the status nor the chart.
func TestLivePageReconnect(t *testing.T) {
	testenv.SkipShort(t, "headless Chromium")
	bus := memoryBus(t)
	w := newWorld(t, bus, live.Deps{})
	mux := http.NewServeMux()
	mux.Handle("/live", live.PageHandler())
	mux.Handle("/api/live", w)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx := testbrowser.New(t)

	testbrowser.Browse(t, ctx, 15*time.Second, chromedp.Navigate(srv.URL+"/live"), chromedp.WaitVisible(chromedp.ID("chart")))
	// Keep every socket the page opens, to play the old one's late events.
	testbrowser.Evaluate[bool](t, ctx, `window.sockets = []; window.WebSocket = class extends WebSocket {
		constructor(...a) { super(...a); window.sockets.push(this); } }; true`)
	device := uuid.New()
	first, second := live.MetricTopic(w.farmA, device, 1), live.MetricTopic(w.farmA, device, 2)
	for _, topic := range []live.Topic{first, second} {
		testbrowser.Evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
			document.getElementById("topic").value = %q; document.getElementById("go").click(); true`, w.aliceToken, topic))
		waitUntil(t, ctx, fmt.Sprintf(`document.getElementById("status").textContent === %q`, "live: "+topic.String()))
	}
	waitUntil(t, ctx, `window.sockets.length === 2 && window.sockets[0].readyState === WebSocket.CLOSED`)
	late, err := json.Marshal(map[string]any{"device_id": device, "metric_id": 1, "value": "41.5", "timestamp": "1700000000000"})
	if err != nil {
		t.Fatal(err)
	}
	testbrowser.Evaluate[bool](t, ctx, fmt.Sprintf(`const old = window.sockets[0];
		old.dispatchEvent(new MessageEvent("message", {data: %q}));
		old.dispatchEvent(new CloseEvent("close", {code: 1006}));
		true`, late))
	bus.Publish(reading(w.farmA, device, 2, "7"))
	waitUntil(t, ctx, `[...document.querySelectorAll("#rows tr")].some(tr => tr.lastChild.textContent === "7")`)
	want := fmt.Sprintf(`{"status":"live: %s","points":"1","late":false}`, second)
	if got := testbrowser.Evaluate[string](t, ctx, `JSON.stringify({status: document.getElementById("status").textContent,
		points: document.getElementById("chart").dataset.points,
		late: document.getElementById("rows").innerText.includes("41.5")})`); got != want {
		t.Fatalf("after the old socket's late events the page shows %s, want %s", got, want)
	}
}

// pageStatus is the /live page's status line, shown when a wait fails.
const pageStatus = `document.getElementById("status").textContent`

// waitUntil polls a JavaScript condition in the tab for up to 10 s.
func waitUntil(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	testbrowser.WaitUntil(t, ctx, 10*time.Second, cond, pageStatus)
}
