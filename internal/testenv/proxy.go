package testenv

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards a loopback port to a target and can fail in the ways a
// network or a server does, so a test can make a server (PostgreSQL,
// Redis, Furrow's own) unreachable for one client without stopping the
// server other tests share. Cut refuses: every connection is closed and new
// ones are closed at once. Blackhole is silent, as when packets are
// dropped: connections stay open but nothing passes either way, and new
// connections are accepted but not answered; after Restore what was held
// passes, as TCP would retransmit it. HoldClient holds only what clients
// send, as a link with a long round trip delays it. Answer closes every
// connection and answers new ones itself, as a server that refuses them at
// its protocol's level does.
type Proxy struct {
	Addr   string
	target string
	ln     net.Listener

	fromTarget atomic.Int64
	accepted   atomic.Int64

	mu     sync.Mutex
	down   bool
	reply  []byte        // while answering: sent for every read of a new connection
	gate   chan struct{} // open while blackholed; closed by Restore
	upGate chan struct{} // open while clients' bytes are held; closed by Restore
	conns  []net.Conn
}

// NewProxy starts a proxy to target, closed when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go p.serve()
	return p
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		down, reply := p.down, p.reply
		if !down {
			p.conns = append(p.conns, c)
		}
		p.mu.Unlock()
		switch {
		case down:
			c.Close()
		case reply != nil:
			go answer(c, reply)
		default:
			go p.connect(c)
		}
	}
}

// answer writes reply for each read of c until c ends.
func answer(c net.Conn, reply []byte) {
	defer c.Close()
	buf := make([]byte, 4<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}

// connect dials the target for c once the proxy lets bytes through, and
// copies both ways.
func (p *Proxy) connect(c net.Conn) {
	p.wait(false)
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	go p.pipe(up, c, true)
	p.pipe(c, up, false)
}

// pipe copies src to dst until either ends, holding what it read while the
// proxy holds it: the client's bytes (toTarget) while HoldClient, both ways
// while blackholed.
func (p *Proxy) pipe(dst, src net.Conn, toTarget bool) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait(toTarget)
			if !toTarget {
				p.fromTarget.Add(int64(n))
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait returns once the proxy lets bytes through, the clients' ones when
// toTarget.
func (p *Proxy) wait(toTarget bool) {
	for {
		p.mu.Lock()
		g := p.gate
		if g == nil && toTarget {
			g = p.upGate
		}
		p.mu.Unlock()
		if g == nil {
			return
		}
		<-g
	}
}

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	p.closeAll()
}

// Blackhole lets nothing through, either way, on open connections and on
// those accepted from now on, until Restore. Nothing is closed, so peers
// notice only by their own timeouts.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate == nil {
		p.gate = make(chan struct{})
	}
}

// HoldClient holds what clients send, on open connections and new ones,
// until Restore; what the target sends passes.
func (p *Proxy) HoldClient() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.upGate == nil {
		p.upGate = make(chan struct{})
	}
}

// Answer closes every connection and, until Restore, answers whatever a
// new connection sends with reply instead of forwarding it.
func (p *Proxy) Answer(reply []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reply = reply
	p.closeAll()
}

// Restore forwards again, first what was held.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down, p.reply = false, nil
	p.open()
}

// FromTarget returns how many bytes the target has sent through the proxy.
func (p *Proxy) FromTarget() int64 { return p.fromTarget.Load() }

// Accepted returns how many connections the proxy has accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// closeAll closes every connection, letting what was held go; p.mu must
// be held.
func (p *Proxy) closeAll() {
	p.open()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *Proxy) open() {
	for _, g := range []*chan struct{}{&p.gate, &p.upGate} {
		if *g != nil {
			close(*g)
			*g = nil
		}
	}
}
