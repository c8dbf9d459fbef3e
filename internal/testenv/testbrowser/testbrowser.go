// Package testbrowser drives headless Chromium for the tests of the /live
// page, through chromedp.
package testbrowser

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/furrowhq/furrow/internal/testenv"
)

// ChromiumPath is where Debian's package chromium installs the browser.
const ChromiumPath = "/usr/bin/chromium"

// New starts headless Chromium with a fresh profile and returns a chromedp
// context for one tab, closed when t ends. Without the browser t fails on
// CI, where the browser is part of the setup, and is skipped elsewhere.
// The flags keep the browser from reaching out to the network, which would
// hang it on a machine without one.
func New(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		msg := fmt.Sprintf("no headless browser at %s (%v): install the Debian package chromium (apt-get install chromium)", ChromiumPath, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING the browser test of the /live page: " + msg)
	}
	out := &testenv.Buffer{} // the browser's output, for the log of a failed test
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(ChromiumPath),
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
		// With /dev/shm off Chromium keeps its shared memory in TMPDIR, and
		// leaves a directory there for each run: the test's own is removed.
		chromedp.Env("TMPDIR="+t.TempDir()),
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
		t.Fatalf("starting %s: %v", ChromiumPath, err)
	}
	return ctx
}

// Browse runs actions in the tab, failing t on error or after limit.
func Browse(t *testing.T, ctx context.Context, limit time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// Evaluate returns the value of a JavaScript expression in the tab.
func Evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// WaitUntil polls a JavaScript condition in the tab, failing t with what
// the expression describe shows when it does not hold within limit.
func WaitUntil(t *testing.T, ctx context.Context, limit time.Duration, cond, describe string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, limit+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(c, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(limit)))
	if err != nil {
		t.Fatalf("page never met %s (%v); it shows %s", cond, err, Evaluate[string](t, ctx, describe))
	}
}
