package main

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/keyring"
	"github.com/furrowhq/furrow/safehttp"
	"github.com/furrowhq/furrow/telemetry"
	"github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/temporal/devserver/devaddr"
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
	// WebhookClient sends the deliveries: built at load, so that a
	// FURROW_WEBHOOK_CA_FILE that cannot be read or holds no PEM
	// certificate stops the start before anything opens, and is read once.
	WebhookClient      *http.Client
	DeviceStaleAfter   time.Duration
	DeviceOfflineAfter time.Duration
	DeviceSweepEvery   time.Duration
	ShutdownTimeout    time.Duration
	DevDataDir         string
	DevTemporalAddr    string
	DevUIAddr          string
	PprofAddr          string
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
	// GOGCSet and GOMemLimitSet say whether Go's own GOGC and GOMEMLIMIT
	// are set, which the runtime has read already; empty counts as unset,
	// as the runtime takes it.
	GOGCSet, GOMemLimitSet bool
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
		DevDataDir:        or(getenv("FURROW_DEV_DATA_DIR"), ".furrow"),
		DevTemporalAddr:   or(getenv("FURROW_DEV_TEMPORAL_ADDR"), "127.0.0.1:7233"),
		DevUIAddr:         or(getenv("FURROW_DEV_UI_ADDR"), "127.0.0.1:8233"),
		PprofAddr:         getenv("FURROW_PPROF_ADDR"),
		MetricsAddr:       or(getenv("FURROW_METRICS_ADDR"), defaultMetricsAddr),
		GOGCSet:           getenv("GOGC") != "",
		GOMemLimitSet:     getenv("GOMEMLIMIT") != "",
	}
	if strings.EqualFold(c.MetricsAddr, "off") {
		c.MetricsAddr = ""
	}
	// Checked here rather than where they are used, which is late (the
	// store opens after Temporal answers, Redis after the store), or
	// never (a Temporal address that is no address is dialled for ever).
	if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
		// The parser's message may quote the password, so it is left out.
		return c, fmt.Errorf("FURROW_DATABASE_URL: not a PostgreSQL connection URL such as postgres://user:password@host:5432/database?sslmode=require (the parser's message is left out: it may quote the password)")
	}
	if c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			return c, fmt.Errorf("FURROW_REDIS_URL: not a Redis URL such as redis://host:6379/0 or rediss://:password@host:6380/0 (the parser's message is left out: it may quote the password)")
		}
	}
	if err := c.checkAddrs(); err != nil {
		return c, err
	}
	var err error
	if c.Tracing, c.TraceProtocol, err = tracingConfig(getenv); err != nil {
		return c, err
	}
	if err := checkGOGC(getenv("GOGC")); err != nil {
		return c, fmt.Errorf("GOGC: %w", err)
	}
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
	c.WebhookClient, err = safehttp.New(safehttp.Options{AllowPrivate: c.WebhookAllowPrivate, CAFile: getenv("FURROW_WEBHOOK_CA_FILE")})
	if err != nil {
		return c, fmt.Errorf("FURROW_WEBHOOK_CA_FILE: %w", err)
	}
	for _, d := range c.durations() {
		if *d.dst, err = parsePositive(or(getenv(d.name), d.def)); err != nil {
			return c, fmt.Errorf("%s: %w", d.name, err)
		}
	}
	if c.DeviceSweepEvery < temporal.MinScheduleInterval {
		return c, fmt.Errorf("FURROW_DEVICE_SWEEP_EVERY: %s is shorter than %s, the shortest interval of a Temporal schedule", c.DeviceSweepEvery, temporal.MinScheduleInterval)
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

// checkAddrs checks the addresses: the listeners', each on its own and
// against each other, Temporal's and the embedded Temporal's.
func (c *Config) checkAddrs() error {
	listeners := []struct{ name, addr string }{
		{"FURROW_HTTP_ADDR", c.HTTPAddr}, {"FURROW_METRICS_ADDR", c.MetricsAddr}, {"FURROW_PPROF_ADDR", c.PprofAddr},
	}
	for i, a := range listeners {
		if a.addr == "" {
			continue
		}
		if err := checkListenAddr(a.addr); err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		for _, b := range listeners[:i] {
			// Metrics and the profiler are never served on the API port,
			// and two listeners on one port would fail as "address
			// already in use", naming neither setting.
			if b.addr != "" && sameListener(a.addr, b.addr) {
				return fmt.Errorf("%s (%q) and %s (%q) take the same port: give each its own", b.name, b.addr, a.name, a.addr)
			}
		}
	}
	if c.TemporalAddress != "" {
		if err := checkDialAddr(c.TemporalAddress); err != nil {
			return fmt.Errorf("FURROW_TEMPORAL_ADDRESS: %w", err)
		}
	}
	for _, a := range []struct{ name, addr string }{
		{"FURROW_DEV_TEMPORAL_ADDR", c.DevTemporalAddr}, {"FURROW_DEV_UI_ADDR", c.DevUIAddr},
	} {
		if _, _, err := devaddr.Split(a.addr); err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
	}
	return nil
}

// tracingConfig says whether the OTEL_EXPORTER_OTLP_* variables turn
// tracing on, and over which protocol, and checks the two the exporter
// would otherwise misread without a word: a protocol it does not speak
// (it would send http/protobuf) and an endpoint that is no URL (it would
// send to its default, localhost). The traces' own variable wins over the
// general one, as in the exporter; only the one in force is checked.
func tracingConfig(getenv func(string) string) (on bool, protocol string, err error) {
	endpoint := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	if getenv(endpoint) == "" {
		endpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	proto := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if getenv(proto) == "" {
		proto = "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	v, protocol := getenv(endpoint), getenv(proto)
	if v == "" {
		return false, protocol, nil // off: neither is read
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false, "", fmt.Errorf("%s: %s is not a URL such as http://collector:4318 (OTLP over HTTP) or http://collector:4317 (gRPC): the scheme, http or https, and the host are required", endpoint, shownURL(v))
	}
	if err := telemetry.CheckOTLPProtocol(protocol); err != nil {
		return false, "", fmt.Errorf("%s: %w", proto, err)
	}
	return true, protocol, nil
}

// shownURL is v quoted for an error, without the credentials a URL may
// carry before its host: the user part is dropped, and a value that does
// not parse but holds an @ is not shown at all.
func shownURL(v string) string {
	u, err := url.Parse(v)
	switch {
	case err == nil:
		u.User = nil
		return strconv.Quote(u.String())
	case strings.Contains(v, "@"):
		return "the value (not shown: it may hold credentials)"
	}
	return strconv.Quote(v)
}

// checkGOGC checks GOGC as the runtime reads it: "off" or a whole
// percentage. The runtime takes anything else for 100 without a word.
func checkGOGC(v string) error {
	if v == "" || v == "off" {
		return nil
	}
	if _, err := strconv.ParseInt(v, 10, 32); err != nil {
		return fmt.Errorf("%q is neither a percentage such as 400 nor off", v)
	}
	return nil
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

// checkDialAddr checks that addr is host:port as the Temporal client dials
// it: no scheme or path, and a port number; or gRPC's dns:///host:port,
// which spreads the calls over every address of the name. The client
// would take http://host:7233 for the host "http" and notahost for a name
// without a port, and dial either in vain for ever.
func checkDialAddr(addr string) error {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(addr, "dns:///"))
	if err != nil || strings.ContainsAny(host, "/@?#") {
		return fmt.Errorf("%q is not host:port, such as temporal-frontend:7233 or 127.0.0.1:7233 (no scheme)", addr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("%q is not host:port: %q is not a port number", addr, port)
	}
	return nil
}

// sameListener reports whether listening on a and on b, both checked by
// checkListenAddr, would take the same port: the same port number, on the
// same host or with either on every interface (":8080" and
// "0.0.0.0:8080" both take 127.0.0.1:8080). Port 0, a free port each
// time, is never the same.
func sameListener(a, b string) bool {
	ha, pa := listenHostPort(a)
	hb, pb := listenHostPort(b)
	if pa == 0 || pa != pb {
		return false
	}
	return ha == "" || hb == "" || ha == hb
}

// listenHostPort returns addr's host, "" for every interface and an IP in
// its canonical form, and its port number.
func listenHostPort(addr string) (string, int) {
	host, port, _ := net.SplitHostPort(addr)
	n, _ := net.LookupPort("tcp", port)
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1" // what net.Listen binds for it
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip = ip.Unmap(); ip.IsUnspecified() {
			return "", n
		}
		return ip.String(), n
	}
	return strings.ToLower(host), n
}

// maxRetryDelays bounds the delays of FURROW_RETRY_SCHEDULE. A delivery
// workflow records about a dozen events per attempt, and Temporal warns at
// 10,240 events and ends a workflow at 51,200: 100 delays keep a chain far
// below both.
const maxRetryDelays = 100

// parseSchedule reads FURROW_RETRY_SCHEDULE: positive delays, at most
// maxRetryDelays, whose chains fit in the attempt log (furrow.ChainSpan
// within furrow.AttemptRetention), so that no attempt outlives the event and
// the attempts it reads.
func parseSchedule(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range strings.Split(s, ",") {
		d, err := parsePositive(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if len(out) > maxRetryDelays {
		return nil, fmt.Errorf("%d delays; at most %d are taken (each attempt adds to its delivery workflow's history, which Temporal bounds)", len(out), maxRetryDelays)
	}
	if furrow.ChainSpan(out) > furrow.AttemptRetention {
		// The most the delays may add up to: the attempt log's span less
		// what ChainSpan adds to the delays for this many attempts.
		most := furrow.AttemptRetention - furrow.ChainSpan(make([]time.Duration, len(out)))
		return nil, fmt.Errorf("the delays add up to more than %s, the most for a chain of %d attempts to fit in the %d days the attempt log keeps",
			most, len(out)+1, furrow.AttemptRetention/(24*time.Hour))
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
