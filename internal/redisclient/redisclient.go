// Package redisclient opens Furrow's Redis client, shared by the rate
// limiter and the live-updates bus, bounded like the store's PostgreSQL
// connections: a silent Redis is found within a bound, and no call outlives
// its context's deadline.
package redisclient

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow/internal/tcpdial"
)

// Options bound the client's connections, as store.Options does for
// PostgreSQL's. Both must be positive.
type Options struct {
	// ConnectTimeout bounds opening one connection, TLS handshake included.
	ConnectTimeout time.Duration
	// DeadConnTimeout is how long a silent Redis may leave a connection
	// unanswered before it is dropped.
	DeadConnTimeout time.Duration
}

// Open returns the client of rawURL, a redis:// or rediss:// URL.
// Connections are made lazily, so Open fails only on a URL it cannot
// parse; the error then does not quote the URL, which may hold a password.
func Open(rawURL string, opts Options) (*redis.Client, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, errors.New("not a redis:// URL")
	}
	opt.ContextTimeoutEnabled = true
	opt.DialTimeout = opts.ConnectTimeout
	opt.DialerRetries = 2
	d := tcpdial.Dialer(opts.ConnectTimeout, opts.DeadConnTimeout)
	tlsConfig := opt.TLSConfig
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil || tlsConfig == nil {
			return c, err
		}
		tc := tls.Client(c, tlsConfig)
		hctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
	return redis.NewClient(opt), nil
}
