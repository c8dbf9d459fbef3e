package main

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/keyring"
)

// Config is every setting of the binary, read once from the environment in
// main and passed down as values.
type Config struct {
	DatabaseURL         string
	RedisURL            string
	HTTPAddr            string
	TemporalAddress     string
	TemporalNamespace   string
	TemporalGzip        bool // FURROW_TEMPORAL_GZIP: compress gRPC to Temporal
	TrustedProxies      []netip.Prefix
	RetrySchedule       []time.Duration
	WebhookAllowPrivate bool
	WebhookCAFile       string
	DeviceStaleAfter    time.Duration
	DeviceOfflineAfter  time.Duration
	DeviceSweepEvery    time.Duration
	ShutdownTimeout     time.Duration
	DevDataDir          string
	DevTemporalAddr     string
	DevUIAddr           string
	PprofAddr           string
	// ReadingsRetention is how long readings are kept; 0 keeps them
	// forever. Whole day partitions are dropped, so up to a day more is kept.
	ReadingsRetention time.Duration
	// Bounds are the time limits of requests and connections.
	Bounds Bounds
	// MetricsAddr is the /metrics listener; "" when FURROW_METRICS_ADDR is off.
	MetricsAddr string
	// Tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_
	// form) is set; the OTLP exporter reads the other OTEL_* variables
	// itself. TraceProtocol is OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL.
	Tracing       bool
	TraceProtocol string
	// SecretKeys seals webhook secrets at rest (FURROW_SECRET_KEYS or
	// FURROW_SECRET_KEYS_FILE); nil stores them unsealed.
	SecretKeys *keyring.Ring
}

// Defaults of the configuration table (docs/operating/configuration.md).
const (
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	defaultHTTPAddr    = ":8080"
	defaultNamespace   = "default"
	defaultProxies     = "127.0.0.0/8,::1/128"
	defaultMetricsAddr = ":9464"
)

// loadConfig reads the FURROW_* variables through getenv. Every malformed
// value is an error naming the variable.
func loadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:       or(getenv("FURROW_DATABASE_URL"), defaultDatabaseURL),
		RedisURL:          getenv("FURROW_REDIS_URL"),
		HTTPAddr:          or(getenv("FURROW_HTTP_ADDR"), defaultHTTPAddr),
		TemporalAddress:   getenv("FURROW_TEMPORAL_ADDRESS"),
		TemporalNamespace: or(getenv("FURROW_TEMPORAL_NAMESPACE"), defaultNamespace),
		WebhookCAFile:     getenv("FURROW_WEBHOOK_CA_FILE"),
		DevDataDir:        or(getenv("FURROW_DEV_DATA_DIR"), ".furrow"),
		DevTemporalAddr:   or(getenv("FURROW_DEV_TEMPORAL_ADDR"), "127.0.0.1:7233"),
		DevUIAddr:         or(getenv("FURROW_DEV_UI_ADDR"), "127.0.0.1:8233"),
		PprofAddr:         getenv("FURROW_PPROF_ADDR"),
		MetricsAddr:       or(getenv("FURROW_METRICS_ADDR"), defaultMetricsAddr),
	}
	if strings.EqualFold(c.MetricsAddr, "off") {
		c.MetricsAddr = ""
	}
	// Checked here rather than where they are used, which is late (the
	// store opens after Temporal answers) or only logged (the worker's
	// probes, the profiler).
	if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
		// The parser's message may quote the password, so it is left out.
		return c, fmt.Errorf("FURROW_DATABASE_URL: not a PostgreSQL connection URL such as postgres://user:password@host:5432/database?sslmode=require (the parser's message is left out: it may quote the password)")
	}
	for _, a := range []struct{ name, addr string }{
		{"FURROW_HTTP_ADDR", c.HTTPAddr}, {"FURROW_PPROF_ADDR", c.PprofAddr}, {"FURROW_METRICS_ADDR", c.MetricsAddr},
	} {
		if err := checkListenAddr(a.addr); a.addr != "" && err != nil {
			return c, fmt.Errorf("%s: %w", a.name, err)
		}
	}
	c.Tracing = getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	c.TraceProtocol = or(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	var err error
	if c.TrustedProxies, err = parsePrefixes(or(getenv("FURROW_TRUSTED_PROXIES"), defaultProxies)); err != nil {
		return c, fmt.Errorf("FURROW_TRUSTED_PROXIES: %w", err)
	}
	c.RetrySchedule = furrow.DefaultSchedule()
	if v := getenv("FURROW_RETRY_SCHEDULE"); v != "" {
		if c.RetrySchedule, err = parseSchedule(v); err != nil {
			return c, fmt.Errorf("FURROW_RETRY_SCHEDULE: %w", err)
		}
	}
	if c.TemporalGzip, err = parseBool(getenv("FURROW_TEMPORAL_GZIP")); err != nil {
		return c, fmt.Errorf("FURROW_TEMPORAL_GZIP: %w", err)
	}
	if c.WebhookAllowPrivate, err = parseBool(getenv("FURROW_WEBHOOK_ALLOW_PRIVATE")); err != nil {
		return c, fmt.Errorf("FURROW_WEBHOOK_ALLOW_PRIVATE: %w", err)
	}
	for _, d := range c.durations() {
		if *d.dst, err = parsePositive(or(getenv(d.name), d.def)); err != nil {
			return c, fmt.Errorf("%s: %w", d.name, err)
		}
	}
	if v := getenv("FURROW_READINGS_RETENTION"); v != "" && v != "0" {
		if c.ReadingsRetention, err = parsePositive(v); err != nil {
			return c, fmt.Errorf("FURROW_READINGS_RETENTION: %w (0 keeps readings forever)", err)
		}
		if c.ReadingsRetention < 24*time.Hour {
			return c, fmt.Errorf("FURROW_READINGS_RETENTION: %s is shorter than the day partitions readings are dropped by; use 24h or more, or 0 to keep them forever", c.ReadingsRetention)
		}
	}
	if err := c.Bounds.check(); err != nil {
		return c, err
	}
	if c.SecretKeys, err = loadSecretKeys(getenv); err != nil {
		return c, err
	}
	if c.DeviceOfflineAfter < c.DeviceStaleAfter {
		return c, fmt.Errorf("FURROW_DEVICE_OFFLINE_AFTER (%s) must not be shorter than FURROW_DEVICE_STALE_AFTER (%s)", c.DeviceOfflineAfter, c.DeviceStaleAfter)
	}
	return c, nil
}

// durationSetting is one FURROW_* duration variable: its default and the
// field it sets.
type durationSetting struct {
	name string
	def  string
	dst  *time.Duration
}

// durations is the one table of c's positive duration settings, device
// thresholds and Bounds alike. docs/operating/configuration.md lists them.
func (c *Config) durations() []durationSetting {
	b := &c.Bounds
	return []durationSetting{
		{"FURROW_DEVICE_STALE_AFTER", "30m", &c.DeviceStaleAfter},
		{"FURROW_DEVICE_OFFLINE_AFTER", "2h", &c.DeviceOfflineAfter},
		{"FURROW_DEVICE_SWEEP_EVERY", "1m", &c.DeviceSweepEvery},
		{"FURROW_SHUTDOWN_TIMEOUT", "30s", &c.ShutdownTimeout},
		// The bounds' defaults are those an operator would pick for
		// devices on slow links.
		{"FURROW_HTTP_READ_HEADER_TIMEOUT", "5s", &b.ReadHeader},
		{"FURROW_HTTP_READ_TIMEOUT", "15s", &b.Read},
		{"FURROW_HTTP_WRITE_TIMEOUT", "15s", &b.Write},
		{"FURROW_HTTP_IDLE_TIMEOUT", "60s", &b.Idle},
		{"FURROW_REQUEST_TIMEOUT", "5s", &b.Request},
		{"FURROW_CONNECT_TIMEOUT", "3s", &b.Connect},
		{"FURROW_DEAD_CONN_TIMEOUT", "10s", &b.DeadConn},
		{"FURROW_RATELIMIT_TIMEOUT", "250ms", &b.Limiter},
		{"FURROW_RATELIMIT_BREAKER", "5s", &b.LimiterBreaker},
	}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// parsePrefixes reads FURROW_TRUSTED_PROXIES: a comma-separated list of IP
// addresses (one host each) and CIDR prefixes. It refuses what would trust
// other peers than written, or none: a prefix with host bits set (is
// 10.0.0.7/24 the host or its network?) and an address with an IPv6 zone,
// which no peer address is compared with. An IPv4-mapped IPv6 entry
// (::ffff:10.0.0.7) is taken as the IPv4 one, the form peers are compared in.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		addr, _, isPrefix := strings.Cut(part, "/")
		a, err := netip.ParseAddr(addr)
		if err != nil {
			if isPrefix {
				return nil, fmt.Errorf("%q is not a CIDR prefix", part)
			}
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", part)
		}
		if a.Zone() != "" {
			return nil, fmt.Errorf("%q has an IPv6 zone (%%%s), which peer addresses are never compared with; write the address without it", part, a.Zone())
		}
		if !isPrefix {
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR prefix", part)
		}
		if m := p.Masked(); m != p {
			return nil, fmt.Errorf("%q has host bits set: write %s for the network or %s for the one address", part, m, netip.PrefixFrom(a, a.BitLen()))
		}
		if a.Is4In6() {
			// Without host bits, a mapped address has a prefix of /96 or longer.
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		out = append(out, p)
	}
	return out, nil
}

// checkListenAddr checks that addr is host:port, as net.Listen takes it:
// the host may be empty (every interface), the port a number or a service
// name.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not a listen address such as :8080 or 127.0.0.1:8080", addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("%q has no valid port: %q is neither a port number nor a service name", addr, port)
	}
	return nil
}

func parseSchedule(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range strings.Split(s, ",") {
		d, err := parsePositive(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func parsePositive(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 30s or 2h", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", s)
	}
	return d, nil
}

func parseBool(s string) (bool, error) {
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not true or false", s)
	}
	return b, nil
}
