package testenv

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// greeter writes a greeting to each connection, then echoes it.
func greeter(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := c.Write([]byte("hello\n")); err != nil {
					return
				}
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// readLine reads a line from r within limit, or returns "" past it.
func readLine(c net.Conn, r *bufio.Reader, limit time.Duration) string {
	_ = c.SetReadDeadline(time.Now().Add(limit))
	line, _ := r.ReadString('\n')
	return line
}

func TestProxyHoldClientHoldsOneWay(t *testing.T) {
	p := NewProxy(t, greeter(t))
	p.HoldClient()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got := readLine(c, r, 5*time.Second); got != "hello\n" {
		t.Fatalf("the target's greeting was held: %q", got)
	}
	if p.FromTarget() != int64(len("hello\n")) {
		t.Fatalf("FromTarget = %d", p.FromTarget())
	}
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if got := readLine(c, r, 300*time.Millisecond); got != "" {
		t.Fatalf("the client's bytes passed while held: echo %q", got)
	}
	p.Restore()
	if got := readLine(c, r, 5*time.Second); got != "ping\n" {
		t.Fatalf("after Restore: %q", got)
	}
}

func TestProxyAnswerReplacesTheTarget(t *testing.T) {
	p := NewProxy(t, greeter(t))
	old, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got := readLine(old, bufio.NewReader(old), 5*time.Second); got != "hello\n" {
		t.Fatalf("forwarded: %q", got)
	}
	p.Answer([]byte("-NO\n"))
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if got := readLine(c, bufio.NewReader(c), 5*time.Second); got != "-NO\n" {
		t.Fatalf("answered %q, want the reply", got)
	}
	if p.Accepted() != 2 {
		t.Fatalf("Accepted = %d, want 2", p.Accepted())
	}
	if _, err := old.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection open before Answer was not closed")
	}
}
