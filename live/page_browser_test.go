package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/live"
)

// chromiumPath is where Debian's package chromium installs the browser.
const chromiumPath = "/usr/bin/chromium"

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
	ctx := newBrowser(t)

	browse(t, ctx, chromedp.Navigate(srv.URL+"/live"), chromedp.WaitVisible(chromedp.ID("chart")))
	// Keep every socket the page opens, to play the old one's late events.
	evaluate[bool](t, ctx, `window.sockets = []; window.WebSocket = class extends WebSocket {
		constructor(...a) { super(...a); window.sockets.push(this); } }; true`)
	device := uuid.New()
	first, second := live.MetricTopic(w.farmA, device, 1), live.MetricTopic(w.farmA, device, 2)
	for _, topic := range []live.Topic{first, second} {
		evaluate[bool](t, ctx, fmt.Sprintf(`document.getElementById("token").value = %q;
			document.getElementById("topic").value = %q; document.getElementById("go").click(); true`, w.aliceToken, topic))
		waitUntil(t, ctx, fmt.Sprintf(`document.getElementById("status").textContent === %q`, "live: "+topic.String()))
	}
	waitUntil(t, ctx, `window.sockets.length === 2 && window.sockets[0].readyState === WebSocket.CLOSED`)
	late, err := json.Marshal(map[string]any{"device_id": device, "metric_id": 1, "value": "41.5", "timestamp": "1700000000000"})
	if err != nil {
		t.Fatal(err)
	}
	evaluate[bool](t, ctx, fmt.Sprintf(`const old = window.sockets[0];
		old.dispatchEvent(new MessageEvent("message", {data: %q}));
		old.dispatchEvent(new CloseEvent("close", {code: 1006}));
		true`, late))
	bus.Publish(reading(w.farmA, device, 2, "7"))
	waitUntil(t, ctx, `[...document.querySelectorAll("#rows tr")].some(tr => tr.lastChild.textContent === "7")`)
	want := fmt.Sprintf(`{"status":"live: %s","points":"1","late":false}`, second)
	if got := evaluate[string](t, ctx, `JSON.stringify({status: document.getElementById("status").textContent,
		points: document.getElementById("chart").dataset.points,
		late: document.getElementById("rows").innerText.includes("41.5")})`); got != want {
		t.Fatalf("after the old socket's late events the page shows %s, want %s", got, want)
	}
}

// newBrowser starts headless Chromium with a fresh profile and returns a
// chromedp context for one tab; without Chromium the test is skipped, or
// fails on CI, where the browser is part of the setup. The flags keep the
// browser from reaching out to the network.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		msg := fmt.Sprintf("no headless browser at %s (%v): install the Debian package chromium", chromiumPath, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING the browser test of the /live page: " + msg)
	}
	out := &testenv.Buffer{}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.CombinedOutput(out),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		if t.Failed() {
			t.Logf("chromium output:\n%s", out.String())
		}
	})
	// The first action starts the browser; its context must not time out.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	return ctx
}

// browse runs steps in the tab, failing t on error or after 15 s.
func browse(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// evaluate returns the value of a JavaScript expression in the tab.
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitUntil polls a JavaScript condition in the tab for up to 10 s.
func waitUntil(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := chromedp.Run(c, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		t.Fatalf("the page never met %s (%v); its status is %q", cond, err,
			evaluate[string](t, ctx, `document.getElementById("status").textContent`))
	}
}
