package loopback

import "sync"

// output collects what a process writes, keeping the last max bytes when
// max is positive.
type output struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(o.buf, p...)
	if over := len(o.buf) - o.max; o.max > 0 && over > 0 {
		o.buf = append(o.buf[:0], o.buf[over:]...)
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.buf)
}
