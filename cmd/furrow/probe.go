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

// serveProbes serves h (the worker's /healthz and /readyz) on addr until
// the returned stop is called. A listen failure is logged, not fatal: the
// worker still works, only its probes are missing.
func serveProbes(addr string, h http.Handler, log *slog.Logger) (stop func()) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Error("worker probes not served: set FURROW_HTTP_ADDR to a free address", "addr", addr, "error", err)
		return func() {}
	}
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
