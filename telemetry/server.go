package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler returns the Prometheus exposition of every metric on m's
// registry. promhttp negotiates the format (text by default).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, Timeout: 10 * time.Second})
}

// Server is the /metrics listener, apart from the API so that metrics are
// never exposed on the public port.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen binds addr (FURROW_METRICS_ADDR) and returns a server serving
// GET /metrics once Serve is called. A busy address is an error that names
// the setting.
func (m *Metrics) Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener (FURROW_METRICS_ADDR=%s; \"off\" disables it): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	return &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// shutdownWait bounds Run's shutdown, so that a slow scrape never holds a
// stopping process.
const shutdownWait = 5 * time.Second

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Run serves until ctx ends, then shuts the listener down, waiting at most
// shutdownWait for scrapes in flight.
func (s *Server) Run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.srv.Serve(s.ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
