package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow/internal/tcpdial"
)

// newRedisClient returns the client of FURROW_REDIS_URL, bounded so that a
// silent Redis is found within b.DeadConn and no call outlives its
// context's deadline.
func newRedisClient(rawURL string, b Bounds) (*redis.Client, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("FURROW_REDIS_URL: not a redis:// URL")
	}
	opt.ContextTimeoutEnabled = true
	opt.DialTimeout = b.Connect
	opt.DialerRetries = 2
	d := tcpdial.Dialer(b.Connect, b.DeadConn)
	tlsConfig := opt.TLSConfig
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil || tlsConfig == nil {
			return c, err
		}
		tc := tls.Client(c, tlsConfig)
		hctx, cancel := context.WithTimeout(ctx, b.Connect)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
	return redis.NewClient(opt), nil
}
