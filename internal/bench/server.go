package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/furrowhq/furrow/internal/loopback"
)

// startServer starts `binary command` on a scratch database beside
// databaseURL, with redisURL (if any) and env added to what it inherits
// from environ (see inherited), waits until it is healthy, and points t at
// it. The returned function stops it and drops the database.
func startServer(ctx context.Context, binary, command string, environ []string, databaseURL, redisURL string, env []string, t *target) (func(), error) {
	dbURL, drop, err := ScratchDatabase(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	env = append(append(inherited(environ), env...), "FURROW_DATABASE_URL="+dbURL)
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

// inherited is environ less its FURROW_* settings: the server under test
// gets only the settings the tool chooses, and the profiling listener's
// address (FURROW_PPROF_ADDR) if one is asked for.
func inherited(environ []string) []string {
	var env []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "FURROW_") || strings.HasPrefix(kv, "FURROW_PPROF_ADDR=") {
			env = append(env, kv)
		}
	}
	return env
}

// startFurrow runs `binary command` with env as its whole environment, and
// waits up to 3 minutes for it to be healthy. It fails, quoting the end of
// the process's log, if the process exits or stays unhealthy. The free
// ports it hands the process are picked before the process binds them, so
// another program may take one meanwhile: a start that fails on an address
// in use is tried again, on new ports, up to startTries times.
func startFurrow(ctx context.Context, binary, command string, env []string) (*loopback.Process, error) {
	for try := 1; ; try++ {
		p, err := loopback.Start(loopback.Command{Binary: binary, Args: []string{command}, Env: env, LogLimit: 16 << 10})
		if err != nil {
			return nil, err
		}
		err = p.WaitHealthy(ctx, 3*time.Minute)
		if err == nil {
			return p, nil
		}
		p.Stop()
		logs := p.Logs()
		if try < startTries && strings.Contains(logs, addrInUse) {
			continue
		}
		return nil, fmt.Errorf("furrow %s: %w; its log ends:\n%s", command, err, logs)
	}
}

// startTries bounds the starts of a server whose port was taken meanwhile.
const startTries = 3

// addrInUse is how a failed listen on a taken port reads in a log.
const addrInUse = "address already in use"
