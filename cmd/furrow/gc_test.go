package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// gcConfig loads the configuration with GOGC and GOMEMLIMIT as given.
func gcConfig(t *testing.T, gogc, memlimit string) Config {
	t.Helper()
	c, err := loadConfig(env(map[string]string{"GOGC": gogc, "GOMEMLIMIT": memlimit}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPaceGCKeepsTheOperatorsSettings(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(1<<40)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })

	paceGC(gcConfig(t, "100", "1TiB"))
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: gc percent %d, want the operator's 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("GOMEMLIMIT set: memory limit %d, want the operator's", got)
	}

	paceGC(gcConfig(t, "", ""))
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("gc percent %d, want %d", got, serveGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != serveMemoryLimit {
		t.Errorf("memory limit %d, want %d", got, serveMemoryLimit)
	}
}

// GOGC and GOMEMLIMIT set but empty are unset, as the runtime takes them:
// serve paces the collector as when they are absent.
func TestPaceGCTakesEmptyForUnset(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(1<<40)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	c, err := loadConfig(func(k string) string {
		if k == "GOGC" || k == "GOMEMLIMIT" {
			return os.Getenv(k) // as main reads them
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	paceGC(c)
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("GOGC empty: gc percent %d, want %d", got, serveGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != serveMemoryLimit {
		t.Errorf("GOMEMLIMIT empty: memory limit %d, want %d", got, serveMemoryLimit)
	}
}

func TestPaceBenchGCKeepsTheMemoryLimit(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(1<<40)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })

	paceBenchGC(gcConfig(t, "150", ""))
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: gc percent %d, want it untouched", got)
	}
	paceBenchGC(gcConfig(t, "", ""))
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("gc percent %d, want %d", got, serveGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("memory limit %d, want none set by the bench", got)
	}
}
