package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/furrowhq/furrow/internal/loopback"
)

// startServer starts `binary command` on a scratch database beside
// databaseURL, with redisURL (if any) and env, waits until it is healthy,
// and points t at it. The returned function stops it and drops the
// database.
func startServer(ctx context.Context, binary, command, databaseURL, redisURL string, env []string, t *target) (func(), error) {
	dbURL, drop, err := ScratchDatabase(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	env = append(env, "FURROW_DATABASE_URL="+dbURL)
	if redisURL != "" {
		env = append(env, "FURROW_REDIS_URL="+redisURL)
	}
	p, err := startFurrow(ctx, binary, command, env)
	if err != nil {
		drop()
		return nil, err
	}
	t.url, t.databaseURL, t.pid, t.started = p.URL, dbURL, p.Pid(), "furrow "+command
	return func() { p.Stop(); drop() }, nil
}

// startFurrow runs `binary command` with env and none of the FURROW_*
// settings of this process, and waits up to 3 minutes for it to be
// healthy. It fails, quoting the end of the process's log, if the process
// exits or stays unhealthy.
func startFurrow(ctx context.Context, binary, command string, env []string) (*loopback.Process, error) {
	var full []string
	for _, kv := range os.Environ() {
		// The server under test gets only the settings the tool chooses,
		// and the profiling listener if one is asked for.
		if !strings.HasPrefix(kv, "FURROW_") || strings.HasPrefix(kv, "FURROW_PPROF_ADDR=") {
			full = append(full, kv)
		}
	}
	p, err := loopback.Start(loopback.Command{Binary: binary, Args: []string{command}, Env: append(full, env...), LogLimit: 16 << 10})
	if err != nil {
		return nil, err
	}
	if err := p.WaitHealthy(ctx, 3*time.Minute); err != nil {
		p.Stop()
		return nil, fmt.Errorf("furrow %s: %w; its log ends:\n%s", command, err, p.Logs())
	}
	return p, nil
}
