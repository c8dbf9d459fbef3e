package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/temporal"
)

// runDev runs everything in one process: migrations, a key ring kept in
// the data directory unless one is set, an embedded Temporal
// (unless FURROW_TEMPORAL_ADDRESS is set), the API, the dispatcher and the
// worker; on an empty database it seeds a demo owner, farm and device.
func runDev(ctx context.Context, cfg Config, obs *observability, log *slog.Logger, stdout io.Writer) error {
	opts := store.MigrateOptions{ConnectTimeout: cfg.Bounds.Connect, DeadConnTimeout: cfg.Bounds.DeadConn, Logger: log}
	if err := store.MigrateWith(ctx, cfg.DatabaseURL, opts); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if cfg.SecretKeys == nil || cfg.TemporalAddress == "" {
		if err := checkDevDataDir(cfg.DevDataDir); err != nil {
			return fmt.Errorf("FURROW_DEV_DATA_DIR: %w", err)
		}
	}
	if cfg.SecretKeys == nil {
		keys, err := devSecretKeys(cfg.DevDataDir, log)
		if err != nil {
			return fmt.Errorf("FURROW_DEV_DATA_DIR: dev key ring: %w", err)
		}
		cfg.SecretKeys = keys
	}
	uiURL := ""
	if cfg.TemporalAddress == "" {
		addr, ui, stop, err := startDevTemporal(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer stop()
		cfg.TemporalAddress, uiURL = addr, ui
	}
	tc, err := temporal.Dial(ctx, temporalOptions(cfg, obs, log))
	if err != nil {
		return err
	}
	defer tc.Close()
	s, err := newServer(ctx, cfg, obs, log, tc)
	if err != nil {
		return err
	}
	ctx, stopDev := context.WithCancelCause(ctx)
	defer stopDev(nil)
	w, err := buildWorker(cfg, obs, log, tc, s.db, s.bus, stopOnFatal(stopDev, log))
	if err != nil {
		s.close()
		return err
	}
	if err := seedDemo(ctx, s.db, cfg, uiURL, stdout); err != nil {
		s.close()
		return err
	}
	if err := serveAll(ctx, s, tc, w); err != nil {
		return err
	}
	return workerFatal(ctx)
}

// checkDevDataDir makes dir if it is missing and checks that files can be
// made in it, before the parts that use it start: the dev key ring and the embedded
// Temporal's SQLite files are kept there, and their own errors, late, would
// not name the setting.
func checkDevDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// serveAll runs s and the worker w until ctx ends.
func serveAll(ctx context.Context, s *server, tc client.Client, w worker.Worker) error {
	if err := startWorker(ctx, s.cfg, s.log, tc, w); err != nil {
		s.close()
		return err
	}
	s.stopWorker = w.Stop
	return s.run(ctx)
}

// demoSeeder is what seeding needs of the store.
type demoSeeder interface {
	furrow.UserService
	furrow.FarmService
	furrow.DeviceService
	Empty(ctx context.Context) (bool, error)
}

// seedDemo creates a demo owner, farm and device on an empty database and
// prints how to use them.
func seedDemo(ctx context.Context, db demoSeeder, cfg Config, uiURL string, out io.Writer) error {
	empty, err := db.Empty(ctx)
	if err != nil || !empty {
		return err
	}
	user, token, err := db.CreateUser(ctx, "demo@furrow.dev")
	if err != nil {
		return fmt.Errorf("seed demo user: %w", err)
	}
	farm, err := db.CreateFarm(ctx, user.ID, "Demo farm")
	if err != nil {
		return fmt.Errorf("seed demo farm: %w", err)
	}
	dev, key, err := db.CreateDevice(ctx, farm.ID, "Demo soil probe")
	if err != nil {
		return fmt.Errorf("seed demo device: %w", err)
	}
	base := "http://" + localAddr(cfg.HTTPAddr)
	fmt.Fprintf(out, `Furrow demo data (shown once; the keys cannot be read again):
  owner:      %s (%s)
  user token: %s
  farm:       %s
  device:     %s
  device key: %s

Post a reading:
  curl -sS -X POST %s/api/metric-values -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{"device_id":"%s","metric_id":220,"value":31.5}'

Live chart: %s/live   Temporal UI: %s
`, user.ID, user.Email, token, farm.ID, dev.ID, key, base, key, dev.ID, base, orNone(uiURL))
	return nil
}

// localAddr turns a listen address such as ":8080" into one to connect to.
func localAddr(listen string) string {
	if strings.HasPrefix(listen, ":") {
		return "127.0.0.1" + listen
	}
	return strings.Replace(listen, "0.0.0.0:", "127.0.0.1:", 1)
}

func orNone(s string) string {
	if s == "" {
		return "(external Temporal)"
	}
	return s
}
