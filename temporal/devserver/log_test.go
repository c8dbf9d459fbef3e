package devserver

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// newTestLogger returns a serverLogger that keeps records at warn and above
// as JSON lines in the returned buffer, as the dev server's is filtered.
func newTestLogger() (serverLogger, *bytes.Buffer) {
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})
	return serverLogger{log: slog.New(minLevelHandler{next: h, min: slog.LevelWarn})}, &buf
}

// records decodes the JSON lines written to buf.
func records(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("decode %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// TestServerLoggerWithKeepsTagsPerBranch checks that tags added with With
// reach the records of that logger only, in order before the record's own,
// even when two loggers are derived from one parent.
func TestServerLoggerWithKeepsTagsPerBranch(t *testing.T) {
	base, buf := newTestLogger()
	// Three With calls, so that a parent whose tags had spare capacity
	// would hand its children one shared array.
	parent := log.With(log.With(base.With(tag.NewStringTag("shard", "1")),
		tag.NewStringTag("queue", "transfer")), tag.NewStringTag("ns", "default"))
	left := log.With(parent, tag.NewStringTag("task", "left"))
	right := log.With(parent, tag.NewStringTag("task", "right"))
	left.Warn("left record", tag.NewStringTag("extra", "x"))
	right.Error("right record")
	parent.Warn("parent record")

	got := records(t, buf)
	if len(got) != 3 {
		t.Fatalf("records = %d, want 3: %s", len(got), buf)
	}
	want := []map[string]any{
		{"msg": "left record", "shard": "1", "ns": "default", "task": "left", "extra": "x"},
		{"msg": "right record", "shard": "1", "task": "right"},
		{"msg": "parent record", "shard": "1"},
	}
	for i, w := range want {
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("record %d: %s = %v, want %v (%v)", i, k, got[i][k], v, got[i])
			}
		}
	}
	if _, ok := got[2]["task"]; ok {
		t.Errorf("parent record carries a child's tag: %v", got[2])
	}
	if !strings.Contains(buf.String(), `"shard":"1","queue":"transfer","ns":"default","task":"left","extra":"x"`) {
		t.Errorf("tags out of order: %s", buf)
	}
}

// TestServerLoggerDropsBelowLevel checks that records below the kept level
// are dropped, with or without tags, and that SLog carries the tags.
func TestServerLoggerDropsBelowLevel(t *testing.T) {
	base, buf := newTestLogger()
	l := base.With(tag.NewStringTag("shard", "2"))
	l.Info("quiet")
	l.Debug("quieter")
	if buf.Len() != 0 {
		t.Fatalf("records below warn were written: %s", buf)
	}
	l.(log.SLogWrapper).SLog().Warn("through slog")
	got := records(t, buf)
	if len(got) != 1 || got[0]["shard"] != "2" || got[0]["msg"] != "through slog" {
		t.Fatalf("SLog record = %v, want one with shard 2", got)
	}
}

// BenchmarkServerLoggerWithDropped measures what the server pays for a
// logger derived per task whose records are all below the kept level.
func BenchmarkServerLoggerWithDropped(b *testing.B) {
	base, _ := newTestLogger()
	tags := []tag.Tag{
		tag.NewStringTag("wf-namespace-id", "ns"),
		tag.NewStringTag("wf-id", "delivery-1"),
		tag.NewStringTag("wf-run-id", "run"),
		tag.NewInt64("queue-task-id", 42),
	}
	b.ReportAllocs()
	for b.Loop() {
		base.With(tags...).Debug("task done")
	}
}
