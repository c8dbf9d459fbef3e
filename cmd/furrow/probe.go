package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// probeTimeout bounds `furrow probe`, well inside the usual health-check
// timeouts of compose and Kubernetes.
const probeTimeout = 3 * time.Second

// probeClient does not follow redirects: the URL itself must answer 200,
// not a page it sends the probe to (a login page, another replica's).
// runProbe bounds each request by probeTimeout.
var probeClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// runProbe is `furrow probe URL`: exit 0 when URL answers 200. The runtime
// image has no shell or curl, so container health checks call the binary.
func runProbe(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("probe takes one URL: %w", errUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	fmt.Fprintf(stdout, "%d %s\n", resp.StatusCode, body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", args[0], resp.StatusCode)
	}
	return nil
}

// listenProbes binds addr (FURROW_HTTP_ADDR) for the worker's /healthz
// and /readyz. It is called first thing, and a busy address is an error
// naming the setting, as for the metrics listener: a worker running on
// without its probes would look dead, or another process's answers would
// stand for its own.
func listenProbes(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("worker probes listener (FURROW_HTTP_ADDR=%s): %w", addr, err)
	}
	return ln, nil
}

// serveProbes serves h (the worker's /healthz and /readyz) on ln until the
// returned stop is called, which closes ln.
func serveProbes(ln net.Listener, h http.Handler, log *slog.Logger) (stop func()) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("worker probes", "error", err)
		}
	}()
	log.Info("worker probes listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}
