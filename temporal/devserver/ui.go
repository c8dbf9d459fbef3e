package devserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// startUI serves the Temporal UI on r.uiAddr against the frontend and waits
// until it answers, so that Stop can never race its listener into existence.
func startUI(ctx context.Context, r *resolved) (*uiserver.Server, error) {
	host, portText, _ := net.SplitHostPort(r.uiAddr)
	port, _ := strconv.Atoi(portText)
	ui := uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                host,
		Port:                port,
		TemporalGRPCAddress: r.frontendAddr,
		EnableUI:            true,
		DefaultNamespace:    r.namespace,
		// Plain http on loopback: secure cookies would never be sent back.
		CORS:             uiconfig.CORS{CookieInsecure: true},
		HideLogs:         true,
		DisableNewsFetch: true,
	}))
	done := make(chan error, 1)
	go func() { done <- ui.Start() }()
	if err := waitHealthy(ctx, "http://"+r.uiAddr+"/healthz", done); err != nil {
		ui.Stop()
		return nil, fmt.Errorf("devserver: start UI on %s: %w", r.uiAddr, err)
	}
	return ui, nil
}

// waitHealthy polls url until it returns 200, ctx ends, or the server exits.
func waitHealthy(ctx context.Context, url string, exited <-chan error) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if healthy(ctx, url) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-exited:
			return fmt.Errorf("UI server exited: %v", err)
		case <-tick.C:
		}
	}
}

func healthy(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
