package bench

import (
	"context"
	"time"
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
	p, err := StartFurrow(ctx, binary, []string{command}, env, 3*time.Minute)
	if err != nil {
		drop()
		return nil, err
	}
	t.url, t.databaseURL, t.pid, t.started = p.URL, dbURL, p.Pid(), "furrow "+command
	return func() { p.Stop(); drop() }, nil
}
