package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/furrowhq/furrow/internal/testenv"
)

// chromiumPath is where Debian's package chromium installs the browser.
const chromiumPath = "/usr/bin/chromium"

// requireChromium returns the browser's path. Without it the test fails on
// CI, where the browser is part of the setup, and is skipped elsewhere.
func requireChromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		msg := fmt.Sprintf("no headless browser at %s (%v): install the Debian package chromium (apt-get install chromium)", chromiumPath, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING the browser test of the /live page: " + msg)
	}
	return chromiumPath
}

// newBrowser starts headless Chromium with a fresh profile and returns a
// chromedp context for one tab. The flags keep it from reaching out to the
// network, which would hang it on a machine without one.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	out := &testenv.Buffer{} // the browser's output, for the log of a failed test
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 800),
		chromedp.Flag("disable-quic", true),
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
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// browse runs actions in the tab, failing t on error or after limit.
func browse(t *testing.T, ctx context.Context, limit time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
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

// waitUntil polls a JavaScript condition in the tab, failing t with what
// describe shows when it does not hold within limit.
func waitUntil(t *testing.T, ctx context.Context, limit time.Duration, cond, describe string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, limit+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(c, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(limit)))
	if err != nil {
		t.Fatalf("page never met %s (%v); it shows %s", cond, err, evaluate[string](t, ctx, describe))
	}
}

// JavaScript read from the /live page.
const (
	pageState = `JSON.stringify({status: document.getElementById("status").textContent,
		points: document.getElementById("chart").dataset.points,
		rows: document.getElementById("rows").innerText})`
	// inkedPixels counts the chart's pixels that are not transparent.
	inkedPixels = `(() => { const c = document.getElementById("chart");
		const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++; return n; })()`
	chartImage = `document.getElementById("chart").toDataURL()`
	rowsText   = `document.getElementById("rows").innerText`
)

// connectPage types the token and topic into the page and presses Connect.
func connectPage(t *testing.T, ctx context.Context, token, topic string) {
	t.Helper()
	// chromedp.Clear only resets the value attribute, not what was typed.
	evaluate[string](t, ctx, `document.getElementById("token").value = document.getElementById("topic").value = ""`)
	browse(t, ctx, 10*time.Second,
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.SendKeys(chromedp.ID("topic"), topic),
	)
	for id, want := range map[string]string{"token": token, "topic": topic} {
		if got := evaluate[string](t, ctx, `document.getElementById("`+id+`").value`); got != want {
			t.Fatalf("the %s field holds %d characters after typing %d", id, len(got), len(want))
		}
	}
	browse(t, ctx, 10*time.Second, chromedp.Click(chromedp.ID("go")))
}

func TestLivePageInBrowser(t *testing.T) {
	testenv.SkipShort(t, "headless Chromium and the furrow binary")
	chromium := requireChromium(t)
	db := newDatabase(t)
	f := start(t, "dev", map[string]string{
		"FURROW_DATABASE_URL":      db,
		"FURROW_DEV_TEMPORAL_ADDR": freeAddr(t),
		"FURROW_DEV_UI_ADDR":       freeAddr(t),
		"FURROW_DEV_DATA_DIR":      t.TempDir(),
	})
	fx := newFixture(t, f, db)
	topic := fmt.Sprintf("farms/%s/devices/%s/metrics/220", fx.FarmID, fx.DeviceID)
	ctx := newBrowser(t, chromium)
	browse(t, ctx, 15*time.Second, chromedp.Navigate(f.URL+"/live"), chromedp.WaitVisible(chromedp.ID("chart")))

	t.Run("a wrong token closes the socket and says so", func(t *testing.T) {
		connectPage(t, ctx, "fut_wrong", topic)
		waitUntil(t, ctx, 10*time.Second, `document.getElementById("status").textContent.startsWith("closed")`, pageState)
	})

	connectPage(t, ctx, fx.Token, topic)
	waitUntil(t, ctx, 10*time.Second, `document.getElementById("status").textContent === "live: `+topic+`"`, pageState)
	if n := evaluate[int](t, ctx, inkedPixels); n != 0 {
		t.Fatalf("chart has %d inked pixels before any reading", n)
	}

	var first string
	drawn := t.Run("posted readings are listed and drawn", func(t *testing.T) {
		for _, v := range []any{41.5, 43.125, "42.25"} {
			postTo(t, f, fx.Key, fx.DeviceID, 220, v)
		}
		waitUntil(t, ctx, 10*time.Second, `document.getElementById("chart").dataset.points === "3"`, pageState)
		rows := evaluate[string](t, ctx, rowsText)
		for _, want := range []string{"41.5", "43.125", "42.25", fx.DeviceID, "220"} {
			if !strings.Contains(rows, want) {
				t.Errorf("readings list lacks %q:\n%s", want, rows)
			}
		}
		if n := evaluate[int](t, ctx, inkedPixels); n < 100 {
			t.Fatalf("chart has only %d inked pixels after three readings", n)
		}
		first = evaluate[string](t, ctx, chartImage)
	})
	if !drawn {
		return
	}

	t.Run("the chart moves; non-numeric values are listed, not drawn", func(t *testing.T) {
		postTo(t, f, fx.Key, fx.DeviceID, 220, "n/a")
		postTo(t, f, fx.Key, fx.DeviceID, 220, 47.75)
		waitUntil(t, ctx, 10*time.Second, `document.getElementById("rows").children.length === 5`, pageState)
		if p := evaluate[string](t, ctx, `document.getElementById("chart").dataset.points`); p != "4" {
			t.Fatalf("chart has %s points after four numeric readings and one text", p)
		}
		rows := evaluate[string](t, ctx, rowsText)
		if !strings.Contains(rows, "n/a") || !strings.Contains(rows, "47.75") {
			t.Fatalf("readings list lacks the new readings:\n%s", rows)
		}
		// The newest reading is listed first.
		if i, j := strings.Index(rows, "47.75"), strings.Index(rows, "41.5"); i > j {
			t.Fatalf("newest reading not on top:\n%s", rows)
		}
		if evaluate[string](t, ctx, chartImage) == first {
			t.Fatal("chart image did not change after a new reading")
		}
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		path := filepath.Join(t.ArtifactDir(), "live-page.png")
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot of the page: %s (kept with go test -artifacts)", path)
	})
}

func TestLivePageAcrossInstances(t *testing.T) {
	testenv.SkipShort(t, "headless Chromium and several furrow processes with a Temporal server")
	chromium := requireChromium(t)
	db := newDatabase(t)
	env := newTemporal(t).env()
	env["FURROW_DATABASE_URL"] = db
	env["FURROW_REDIS_URL"] = testenv.RedisURL(t)
	a := start(t, "serve", env)
	b := start(t, "serve", env)
	fx := newFixture(t, a, db)
	other, otherKey := newDevice(t, a, fx)
	ctx := newBrowser(t, chromium)
	browse(t, ctx, 15*time.Second, chromedp.Navigate(b.URL+"/live"), chromedp.WaitVisible(chromedp.ID("chart")))
	topic := "farms/" + fx.FarmID + "/readings"
	connectPage(t, ctx, fx.Token, topic)
	waitUntil(t, ctx, 10*time.Second, `document.getElementById("status").textContent === "live: `+topic+`"`, pageState)

	// Readings posted to A draw on a page served by B, one line per device.
	for i, v := range []float64{18.5, 19.25, 21, 20.75} {
		if i%2 == 0 {
			postTo(t, a, fx.Key, fx.DeviceID, 220, v)
		} else {
			postTo(t, a, otherKey, other, 220, v)
		}
	}
	waitUntil(t, ctx, 10*time.Second, `document.getElementById("chart").dataset.points === "4"`, pageState)
	rows := evaluate[string](t, ctx, rowsText)
	for _, want := range []string{fx.DeviceID, other, "18.5", "19.25", "20.75"} {
		if !strings.Contains(rows, want) {
			t.Errorf("readings list on B lacks %q:\n%s", want, rows)
		}
	}
	if n := evaluate[int](t, ctx, inkedPixels); n < 100 {
		t.Fatalf("chart on B has only %d inked pixels after four readings", n)
	}
}
