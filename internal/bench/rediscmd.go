package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow/internal/redisclient"
)

// RedisCommand is what Redis spent on one command over a run, by its own
// INFO commandstats: the calls and the microseconds of Redis's time in
// them. Redis's CPU beyond the commands (reading and writing sockets) is
// in the run's "redis" CPU group.
type RedisCommand struct {
	Calls int64 `json:"calls"`
	Usec  int64 `json:"usec"`
}

// redisMeter reads the command statistics of the Redis a run uses.
type redisMeter struct{ c *redis.Client }

// newRedisMeter returns a meter of the Redis at url, or nil when url is
// empty or not a Redis URL: the figures are then left out.
func newRedisMeter(url string) *redisMeter {
	if url == "" {
		return nil
	}
	c, err := redisclient.Open(url, redisclient.Options{ConnectTimeout: meterTimeout, DeadConnTimeout: 2 * meterTimeout})
	if err != nil {
		return nil
	}
	return &redisMeter{c: c}
}

func (m *redisMeter) close() {
	if m != nil {
		_ = m.c.Close()
	}
}

// read returns the command statistics now; nil when m is nil or Redis
// does not answer within meterTimeout.
func (m *redisMeter) read(ctx context.Context) map[string]RedisCommand {
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, meterTimeout)
	defer cancel()
	info, err := m.c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil
	}
	return parseCommandStats(info)
}

// parseCommandStats parses the lines cmdstat_NAME:calls=N,usec=N,... of
// INFO commandstats.
func parseCommandStats(info string) map[string]RedisCommand {
	out := map[string]RedisCommand{}
	for _, line := range strings.Split(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		var c RedisCommand
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				c.Calls = n
			case "usec":
				c.Usec = n
			}
		}
		out[name] = c
	}
	return out
}

// addCommandDelta adds to sum what after counted beyond before; a nil
// snapshot leaves sum as it is.
func addCommandDelta(sum, before, after map[string]RedisCommand) map[string]RedisCommand {
	if before == nil || after == nil {
		return sum
	}
	if sum == nil {
		sum = map[string]RedisCommand{}
	}
	for name, a := range after {
		b := before[name]
		if d := (RedisCommand{Calls: a.Calls - b.Calls, Usec: a.Usec - b.Usec}); d.Calls > 0 {
			s := sum[name]
			sum[name] = RedisCommand{Calls: s.Calls + d.Calls, Usec: s.Usec + d.Usec}
		}
	}
	return sum
}

// printRedisCommands writes Redis's time and calls per stored reading, by
// command, costliest first.
func printRedisCommands(w io.Writer, cmds map[string]RedisCommand, created int64) {
	if len(cmds) == 0 || created <= 0 {
		return
	}
	names := keysByValue(cmds, func(c RedisCommand) float64 { return float64(c.Usec) })
	fmt.Fprintf(w, "  Redis's command time per stored reading:")
	for _, n := range names {
		c := cmds[n]
		fmt.Fprintf(w, " %s %.1f µs (%.2f calls);", n, float64(c.Usec)/float64(created), float64(c.Calls)/float64(created))
	}
	fmt.Fprintln(w)
}
