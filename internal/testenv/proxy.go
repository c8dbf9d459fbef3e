package testenv

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards a loopback port to a target and can fail in the two ways a
// network does, so a test can make a server (PostgreSQL, Redis) unreachable
// for one client without stopping the server other tests share. Cut refuses:
// every connection is closed and new ones are closed at once. Blackhole is
// silent, as when packets are dropped: connections stay open but nothing
// passes either way, and new connections are accepted but not answered;
// after Restore what was held passes, as TCP would retransmit it.
type Proxy struct {
	Addr   string
	target string
	ln     net.Listener

	mu    sync.Mutex
	down  bool
	gate  chan struct{} // open while blackholed; closed by Restore
	conns []net.Conn
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
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go p.connect(c)
	}
}

// connect dials the target for c once the proxy lets bytes through, and
// copies both ways.
func (p *Proxy) connect(c net.Conn) {
	p.wait()
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
	go p.pipe(up, c)
	p.pipe(c, up)
}

// pipe copies src to dst until either ends, holding what it read while the
// proxy is blackholed.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait returns once the proxy is not blackholed.
func (p *Proxy) wait() {
	p.mu.Lock()
	g := p.gate
	p.mu.Unlock()
	if g != nil {
		<-g
	}
}

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	p.open()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
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

// Restore forwards again, first what was held while blackholed.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	p.open()
}

func (p *Proxy) open() {
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
}
