package store_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/store"
)

// proxy forwards TCP connections to target until stopped, and can be
// started again on the same address: PostgreSQL going away and coming back.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func (p *proxy) start(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func ping(db *store.DB) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return db.Ping(ctx)
}

func TestPingFollowsDatabaseAvailability(t *testing.T) {
	u, err := url.Parse(testenv.NewDatabase(t, migrator))
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: "127.0.0.1:0", target: u.Host}
	p.start(t)
	t.Cleanup(p.stop)
	u.Host = p.addr
	db, err := store.Open(context.Background(), u.String(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := ping(db); err != nil {
		t.Fatalf("ping while up: %v", err)
	}
	p.stop()
	if err := ping(db); err == nil {
		t.Fatal("ping succeeded while the database was unreachable")
	}
	p.start(t)
	if err := ping(db); err != nil {
		t.Fatalf("ping after the database came back: %v", err)
	}
}
