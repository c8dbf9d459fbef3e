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
	"github.com/furrowhq/furrow/internal/testenv/testbrowser"
)

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
	testbrowser.Evaluate[string](t, ctx, `document.getElementById("token").value = document.getElementById("topic").value = ""`)
	testbrowser.Browse(t, ctx, 10*time.Second,
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.SendKeys(chromedp.ID("topic"), topic),
	)
	for id, want := range map[string]string{"token": token, "topic": topic} {
		if got := testbrowser.Evaluate[string](t, ctx, `document.getElementById("`+id+`").value`); got != want {
			t.Fatalf("the %s field holds %d characters after typing %d", id, len(got), len(want))
		}
	}
	testbrowser.Browse(t, ctx, 10*time.Second, chromedp.Click(chromedp.ID("go")))
}

func TestLivePageInBrowser(t *testing.T) {
	testenv.SkipShort(t, "headless Chromium and the furrow binary")
	db := newDatabase(t)
	f := start(t, "dev", map[string]string{
		"FURROW_DATABASE_URL":      db,
		"FURROW_DEV_TEMPORAL_ADDR": freeAddr(t),
		"FURROW_DEV_UI_ADDR":       freeAddr(t),
		"FURROW_DEV_DATA_DIR":      t.TempDir(),
	})
	fx := newFixture(t, f, db)
	topic := fmt.Sprintf("farms/%s/devices/%s/metrics/220", fx.FarmID, fx.DeviceID)
	ctx := testbrowser.New(t)
	testbrowser.Browse(t, ctx, 15*time.Second, chromedp.Navigate(f.URL+"/live"), chromedp.WaitVisible(chromedp.ID("chart")))

	t.Run("a wrong token closes the socket and says so", func(t *testing.T) {
		connectPage(t, ctx, "fut_wrong", topic)
		testbrowser.WaitUntil(t, ctx, 10*time.Second, `document.getElementById("status").textContent.startsWith("closed")`, pageState)
	})

	connectPage(t, ctx, fx.Token, topic)
	testbrowser.WaitUntil(t, ctx, 10*time.Second, `document.getElementById("status").textContent === "live: `+topic+`"`, pageState)
	if n := testbrowser.Evaluate[int](t, ctx, inkedPixels); n != 0 {
		t.Fatalf("chart has %d inked pixels before any reading", n)
	}

	var first string
	drawn := t.Run("posted readings are listed and drawn", func(t *testing.T) {
		for _, v := range []any{41.5, 43.125, "42.25"} {
			postTo(t, f, fx.Key, fx.DeviceID, 220, v)
		}
		testbrowser.WaitUntil(t, ctx, 10*time.Second, `document.getElementById("chart").dataset.points === "3"`, pageState)
		rows := testbrowser.Evaluate[string](t, ctx, rowsText)
		for _, want := range []string{"41.5", "43.125", "42.25", fx.DeviceID, "220"} {
			if !strings.Contains(rows, want) {
				t.Errorf("readings list lacks %q:\n%s", want, rows)
			}
		}
		if n := testbrowser.Evaluate[int](t, ctx, inkedPixels); n < 100 {
			t.Fatalf("chart has only %d inked pixels after three readings", n)
		}
		first = testbrowser.Evaluate[string](t, ctx, chartImage)
	})
	if !drawn {
		return
	}

	t.Run("the chart moves; non-numeric values are listed, not drawn", func(t *testing.T) {
		postTo(t, f, fx.Key, fx.DeviceID, 220, "n/a")
		postTo(t, f, fx.Key, fx.DeviceID, 220, 47.75)
		testbrowser.WaitUntil(t, ctx, 10*time.Second, `document.getElementById("rows").children.length === 5`, pageState)
		if p := testbrowser.Evaluate[string](t, ctx, `document.getElementById("chart").dataset.points`); p != "4" {
			t.Fatalf("chart has %s points after four numeric readings and one text", p)
		}
		rows := testbrowser.Evaluate[string](t, ctx, rowsText)
		if !strings.Contains(rows, "n/a") || !strings.Contains(rows, "47.75") {
			t.Fatalf("readings list lacks the new readings:\n%s", rows)
		}
		// The newest reading is listed first.
		if i, j := strings.Index(rows, "47.75"), strings.Index(rows, "41.5"); i > j {
			t.Fatalf("newest reading not on top:\n%s", rows)
		}
		if testbrowser.Evaluate[string](t, ctx, chartImage) == first {
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
	db := newDatabase(t)
	env := newTemporal(t).env()
	env["FURROW_DATABASE_URL"] = db
	env["FURROW_REDIS_URL"] = testenv.RedisURL(t)
	a := start(t, "serve", env)
	b := start(t, "serve", env)
	fx := newFixture(t, a, db)
	other, otherKey := newDevice(t, a, fx)
	ctx := testbrowser.New(t)
	testbrowser.Browse(t, ctx, 15*time.Second, chromedp.Navigate(b.URL+"/live"), chromedp.WaitVisible(chromedp.ID("chart")))
	topic := "farms/" + fx.FarmID + "/readings"
	connectPage(t, ctx, fx.Token, topic)
	testbrowser.WaitUntil(t, ctx, 10*time.Second, `document.getElementById("status").textContent === "live: `+topic+`"`, pageState)

	// Readings posted to A draw on a page served by B, one line per device.
	for i, v := range []float64{18.5, 19.25, 21, 20.75} {
		if i%2 == 0 {
			postTo(t, a, fx.Key, fx.DeviceID, 220, v)
		} else {
			postTo(t, a, otherKey, other, 220, v)
		}
	}
	testbrowser.WaitUntil(t, ctx, 10*time.Second, `document.getElementById("chart").dataset.points === "4"`, pageState)
	rows := testbrowser.Evaluate[string](t, ctx, rowsText)
	for _, want := range []string{fx.DeviceID, other, "18.5", "19.25", "20.75"} {
		if !strings.Contains(rows, want) {
			t.Errorf("readings list on B lacks %q:\n%s", want, rows)
		}
	}
	if n := testbrowser.Evaluate[int](t, ctx, inkedPixels); n < 100 {
		t.Fatalf("chart on B has only %d inked pixels after four readings", n)
	}
}
