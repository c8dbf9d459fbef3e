package devserver

import (
	"context"
	"log/slog"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// minLevelHandler drops records below min before they reach next, so the
// embedded server, which is chatty at info, stays quiet in a terminal.
type minLevelHandler struct {
	next slog.Handler
	min  slog.Leveler
}

func (h minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min.Level() && h.next.Enabled(ctx, l)
}

func (h minLevelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h minLevelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevelHandler{next: h.next.WithAttrs(attrs), min: h.min}
}

func (h minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{next: h.next.WithGroup(name), min: h.min}
}

// serverLogger adapts a slog.Logger to the Temporal server's log.Logger.
// The server derives a logger with tags for every task it runs, and most of
// them never log at the level kept, so With only keeps the tags; they are
// converted when a record is kept.
type serverLogger struct {
	log  *slog.Logger
	tags []tag.Tag
}

var (
	_ log.Logger      = serverLogger{}
	_ log.WithLogger  = serverLogger{}
	_ log.SLogWrapper = serverLogger{}
)

func (l serverLogger) Debug(msg string, tags ...tag.Tag) { l.emit(slog.LevelDebug, msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)  { l.emit(slog.LevelInfo, msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag)  { l.emit(slog.LevelWarn, msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }

// DPanic, Panic and Fatal only log: a dev server must not panic or exit the
// process that embeds it.
func (l serverLogger) DPanic(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) Panic(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) Fatal(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }

// With returns a logger that adds tags to every record.
func (l serverLogger) With(tags ...tag.Tag) log.Logger {
	if len(tags) == 0 {
		return l
	}
	// A new slice each time: loggers derived from one parent must not share
	// the array that a later With appends to.
	all := make([]tag.Tag, 0, len(l.tags)+len(tags))
	return serverLogger{log: l.log, tags: append(append(all, l.tags...), tags...)}
}

// SLog lets server components that speak slog use the same filtered logger.
func (l serverLogger) SLog() *slog.Logger {
	if len(l.tags) == 0 {
		return l.log
	}
	return l.log.With(attrs(l.tags, nil)...)
}

func (l serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return // skip converting tags for records that would be dropped
	}
	l.log.Log(ctx, level, msg, attrs(l.tags, tags)...)
}

// attrs converts the logger's tags, then the record's, to slog attributes.
func attrs(base, tags []tag.Tag) []any {
	out := make([]any, 0, len(base)+len(tags))
	for _, t := range base {
		out = append(out, slog.Any(t.Key(), t.Value()))
	}
	for _, t := range tags {
		out = append(out, slog.Any(t.Key(), t.Value()))
	}
	return out
}
