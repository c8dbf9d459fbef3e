package main

import (
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
)

func TestServiceLogWritesInfoLaterAndWarningsAtOnce(t *testing.T) {
	var out testenv.Buffer
	buf := newLogBuffer(&out, time.Hour)
	log := serviceLogger(buf).With("component", "api")
	log.Info("first")
	if got := out.String(); got != "" {
		t.Fatalf("an info line was written at once: %q", got)
	}
	log.Warn("second")
	got := out.String()
	if !strings.Contains(got, "msg=first") || !strings.Contains(got, "msg=second") || strings.Index(got, "first") > strings.Index(got, "second") {
		t.Fatalf("after a warning: %q, want the info line then the warning", got)
	}
	log.Info("third")
	buf.close()
	if !strings.Contains(out.String(), "msg=third component=api") {
		t.Fatalf("close did not write the last line: %q", out.String())
	}
}

func TestServiceLogWritesInfoWithinItsInterval(t *testing.T) {
	var out testenv.Buffer
	buf := newLogBuffer(&out, 10*time.Millisecond)
	defer buf.close()
	serviceLogger(buf).Info("waiting")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "msg=waiting") {
		if time.Now().After(deadline) {
			t.Fatal("the info line was never written")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
