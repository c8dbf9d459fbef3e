package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

const (
	// logFlushEvery is the longest an Info line of a service waits in its
	// buffer before it is written.
	logFlushEvery = 100 * time.Millisecond
	// logBufferMax is how much may wait before it is written at once.
	logBufferMax = 32 << 10
)

// logBuffer gathers the log lines of a long-running command and writes
// them to out in one call every logFlushEvery, instead of one write per
// line: at thousands of requests a second, writing each request's line was
// about a tenth of furrow's CPU per stored reading, plus a read in whatever
// collects its output (BENCHMARKS.md). serviceLogger writes the buffer out
// at once after a line at Warn or above, so that what led to a failure is
// out when the failure is; close writes the rest. A process killed outright
// (SIGKILL, an unrecovered panic) loses at most logFlushEvery of lines;
// the runtime writes a panic's own report directly.
type logBuffer struct {
	mu   sync.Mutex
	out  io.Writer
	buf  []byte
	stop chan struct{}
	done chan struct{}
}

// newLogBuffer returns a buffer written to out every every (logFlushEvery
// for services).
func newLogBuffer(out io.Writer, every time.Duration) *logBuffer {
	b := &logBuffer{out: out, stop: make(chan struct{}), done: make(chan struct{})}
	go b.tick(every)
	return b
}

func (b *logBuffer) tick(every time.Duration) {
	defer close(b.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.flush()
		case <-b.stop:
			b.flush()
			return
		}
	}
}

// Write keeps p for the next flush; a full buffer is written at once.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) >= logBufferMax {
		b.flushLocked()
	}
	return len(p), nil
}

func (b *logBuffer) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

// flushLocked writes what waits. A failed write is dropped: there is
// nowhere else to log it.
func (b *logBuffer) flushLocked() {
	if len(b.buf) == 0 {
		return
	}
	_, _ = b.out.Write(b.buf)
	b.buf = b.buf[:0]
}

// close writes what waits and stops the ticker.
func (b *logBuffer) close() {
	close(b.stop)
	<-b.done
}

// serviceLogger returns the logger of a long-running command, writing to
// b, and flushing b after every record at Warn or above.
func serviceLogger(b *logBuffer) *slog.Logger {
	return slog.New(urgentFlush{Handler: slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo}), buf: b})
}

// urgentFlush writes its buffer out after each record at Warn or above.
type urgentFlush struct {
	slog.Handler
	buf *logBuffer
}

// Handle implements slog.Handler.
func (h urgentFlush) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.buf.flush()
	}
	return err
}

// WithAttrs implements slog.Handler.
func (h urgentFlush) WithAttrs(attrs []slog.Attr) slog.Handler {
	return urgentFlush{Handler: h.Handler.WithAttrs(attrs), buf: h.buf}
}

// WithGroup implements slog.Handler.
func (h urgentFlush) WithGroup(name string) slog.Handler {
	return urgentFlush{Handler: h.Handler.WithGroup(name), buf: h.buf}
}
