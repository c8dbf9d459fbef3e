// Package devserver runs a complete Temporal server (frontend, history,
// matching and worker services) and the Temporal UI inside the calling
// process, backed by SQLite. It is what `furrow dev` uses so that one command
// brings up everything; production talks to a real Temporal cluster instead.
//
// Only this package imports go.temporal.io/server, so binaries that do not
// run the dev server do not link it.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/server/temporal"

	"github.com/furrowhq/furrow"
)

// Defaults applied by Start to zero Options fields.
const (
	DefaultFrontendAddr = "127.0.0.1:7233"
	DefaultUIAddr       = "127.0.0.1:8233"
	DefaultNamespace    = "default"
	DefaultRetention    = furrow.AttemptRetention
)

// dbFileName is the SQLite file kept inside Options.DataDir.
const dbFileName = "temporal.db"

// visibilityFileName keeps the visibility records (the workflow lists of
// the UI) in a second SQLite file: SQLite has one writer per file, and the
// plugin one connection per database, so a file of their own lets them be
// written beside, not between, the history writes.
const visibilityFileName = "visibility.db"

// Options configures Start. The zero value is valid: an in-memory server on
// the default addresses with the UI on.
type Options struct {
	// FrontendAddr is the gRPC address clients dial, an IP and a port.
	// Default DefaultFrontendAddr; port 0 picks a free port.
	FrontendAddr string
	// UIAddr is where the Temporal UI listens. Default DefaultUIAddr;
	// port 0 picks a free port.
	UIAddr string
	// DisableUI turns the Temporal UI off.
	DisableUI bool
	// Namespace is registered at start if missing. Default DefaultNamespace.
	Namespace string
	// DataDir holds the SQLite file (DataDir/temporal.db), created if
	// missing. Empty keeps all state in memory, lost at Stop.
	DataDir string
	// Retention is how long closed workflows are kept; at least one day.
	// Default DefaultRetention. An existing namespace is updated to it.
	Retention time.Duration
	// SearchAttributes are registered on the namespace if missing, e.g.
	// {"FurrowWebhookId": enums.INDEXED_VALUE_TYPE_KEYWORD}.
	SearchAttributes map[string]enums.IndexedValueType
	// Logger receives the server's warnings and errors; lower levels are
	// dropped. Default slog.Default().
	Logger *slog.Logger
}

// Server is a running dev server. Stop it when done.
type Server struct {
	server       temporal.Server
	ui           *uiserver.Server
	frontendAddr string
	uiURL        string
	logLevel     *slog.LevelVar
	stopOnce     sync.Once
	stopErr      error
}

// Start starts the server and returns once the frontend accepts calls, the
// namespace exists with the requested retention and search attributes, and
// the UI (unless disabled) answers. ctx bounds the start-up only.
//
// It returns a *furrow.Error with code furrow.EINVALID for bad Options, and
// a wrapped error when an address is in use, the SQLite file cannot be
// prepared, or the server fails to start.
func Start(ctx context.Context, opts Options) (*Server, error) {
	cfg, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	if err := prepareDatabase(cfg); err != nil {
		return nil, err
	}
	srv, err := temporal.NewServer(serverOptions(cfg)...)
	if err != nil {
		return nil, fmt.Errorf("devserver: build temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("devserver: start temporal server: %w", err)
	}
	s := &Server{server: srv, frontendAddr: cfg.frontendAddr, logLevel: cfg.level}
	if err := s.finishStart(ctx, cfg); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// finishStart brings the namespace to the requested state and starts the UI.
func (s *Server) finishStart(ctx context.Context, cfg *resolved) error {
	if err := reconcileNamespace(ctx, cfg); err != nil {
		return err
	}
	if cfg.disableUI {
		return nil
	}
	ui, err := startUI(ctx, cfg)
	if err != nil {
		return err
	}
	s.ui, s.uiURL = ui, "http://"+cfg.uiAddr
	return nil
}

// FrontendAddr returns the host:port of the gRPC frontend, for client.Dial.
func (s *Server) FrontendAddr() string { return s.frontendAddr }

// UIURL returns the base URL of the Temporal UI, or "" if it is disabled.
func (s *Server) UIURL() string { return s.uiURL }

// Stop stops the UI and the server. State in DataDir is kept for the next
// Start. It is safe to call more than once; later calls return the first
// result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		// Services shutting down warn and err about each other's closed
		// connections and cancelled contexts; Stop's result says what matters.
		s.logLevel.Set(slog.LevelError + 1)
		if s.ui != nil {
			s.ui.Stop()
		}
		s.stopErr = s.server.Stop()
	})
	return s.stopErr
}
