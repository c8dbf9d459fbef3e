// Package safehttp builds the HTTP client that delivers webhooks to
// user-registered endpoints. The client never follows redirects, uses no
// proxy, and, unless private addresses are allowed, refuses at dial time
// every connection to a loopback, private, link-local or otherwise
// non-public address, so neither a URL nor a DNS answer (including one that
// changes between validation and delivery) can reach inside the network.
package safehttp

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/furrowhq/furrow"
)

// Options configure New.
type Options struct {
	// AllowPrivate turns the address guard off, for tests and local
	// development only; callers should log loudly when it is set.
	AllowPrivate bool
	// CAFile names a PEM file of extra roots trusted in addition to the
	// system pool, for receivers with self-signed certificates.
	CAFile string
	// Timeout bounds a whole request, response body included; zero or
	// negative means furrow.DeliveryTimeout.
	Timeout time.Duration
}

// MaxResponseHeaderBytes bounds the status line and headers of an
// endpoint's answer; a longer head fails the attempt as a connection
// failure.
const MaxResponseHeaderBytes = 64 << 10

// New returns a client for webhook deliveries configured by opts. Its
// redirect answers are returned as they are (a 3xx is the response), and a
// refused connection fails with an error wrapping ErrForbiddenAddress. New
// returns an error if CAFile cannot be read or holds no PEM certificate.
func New(opts Options) (*http.Client, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = furrow.DeliveryTimeout
	}
	tlsConf, err := tlsConfig(opts.CAFile)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !opts.AllowPrivate {
		dialer.Control = control
	}
	transport := &http.Transport{
		// A proxy would make the guard check the proxy instead of the
		// endpoint.
		Proxy:             nil,
		DialContext:       dialer.DialContext,
		TLSClientConfig:   tlsConf,
		ForceAttemptHTTP2: true,
		MaxIdleConns:      100,
		// Deliveries to one busy receiver reuse connections instead of
		// opening one per event.
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		// An answer's head is read whole before the attempt can judge it:
		// bound it well below the transport's default of 10 MB.
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, nil
}

// control runs after name resolution for each address the dialer tries, so
// every resolved IP is checked right before the connection is made.
func control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dialed address %q", ErrForbiddenAddress, address)
	}
	return CheckAddr(ap.Addr())
}

func tlsConfig(caFile string) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return conf, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("safehttp: reading CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("safehttp: CA file %s holds no PEM certificate", caFile)
	}
	conf.RootCAs = pool
	return conf, nil
}
