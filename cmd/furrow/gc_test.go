package main

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestPaceGCKeepsTheOperatorsSettings(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(1<<40)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })

	t.Setenv("GOGC", "100")
	t.Setenv("GOMEMLIMIT", "1TiB")
	paceGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: gc percent %d, want the operator's 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("GOMEMLIMIT set: memory limit %d, want the operator's", got)
	}

	os.Unsetenv("GOGC")
	os.Unsetenv("GOMEMLIMIT")
	paceGC()
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("gc percent %d, want %d", got, serveGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != serveMemoryLimit {
		t.Errorf("memory limit %d, want %d", got, serveMemoryLimit)
	}
}

func TestPaceBenchGCKeepsTheMemoryLimit(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(1<<40)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })

	t.Setenv("GOGC", "150")
	paceBenchGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC set: gc percent %d, want it untouched", got)
	}
	os.Unsetenv("GOGC")
	paceBenchGC()
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("gc percent %d, want %d", got, serveGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("memory limit %d, want none set by the bench", got)
	}
}
