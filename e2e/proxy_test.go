package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/loopback"
	"github.com/furrowhq/furrow/internal/testenv"
)

// proxyConfig is the shipped proxy configuration that compose and the Helm
// chart use too.
const proxyConfig = "../deploy/proxy/haproxy.cfg"

// proxySource is the address the proxy connects to furrow from, so that it
// differs from the test's own 127.0.0.1 and can be the only trusted peer.
const proxySource = "127.0.0.2"

// TestDeviceCertificateProxy starts the shipped HAProxy configuration with a
// device CA made by deploy/proxy/device-certs.sh in front of `furrow serve`
// and checks the device-certificate scheme (docs/devices.md) through it.
func TestDeviceCertificateProxy(t *testing.T) {
	testenv.SkipShort(t, "HAProxy in front of furrow serve")
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		haproxy = "/usr/sbin/haproxy" // Debian's place, often outside a user's PATH
		if _, err := os.Stat(haproxy); err != nil {
			t.Fatalf("haproxy is not installed (Debian package haproxy; .ci/run installs it): %v", err)
		}
	}
	db := newDatabase(t)
	api := start(t, "serve", map[string]string{
		"FURROW_DATABASE_URL":     db,
		"FURROW_TEMPORAL_ADDRESS": freeAddr(t), // serve dials lazily; readings wait in the outbox
		"FURROW_TRUSTED_PROXIES":  proxySource + "/32",
	})
	fx := newFixture(t, api, db)
	otherID, otherKey := newDevice(t, api, fx)

	dir := t.TempDir()
	certs := filepath.Join(dir, "devices")
	deviceCerts(t, "ca", certs)
	deviceCerts(t, "issue", certs, fx.DeviceID)
	deviceCerts(t, "issue", certs, "7b0d6f3e-58c4-4b8e-9a55-1f0c2d3e4f50") // valid, but no such device
	rogue := filepath.Join(dir, "rogue")
	deviceCerts(t, "ca", rogue)
	deviceCerts(t, "issue", rogue, fx.DeviceID)
	expired := expiredCert(t, certs, fx.DeviceID)

	proxy := startProxy(t, haproxy, dir, filepath.Join(certs, "ca.pem"), strings.TrimPrefix(api.URL, "http://"))
	post := func(c *http.Client, base, device string, headers ...string) response {
		return do(t, c, "POST", base+"/api/metric-values", reading(device, 21.5), headers...)
	}
	withCert := func(pair ...string) *http.Client { return proxy.client(t, pair...) }
	valid := withCert(filepath.Join(certs, "device-"+fx.DeviceID+".pem"), filepath.Join(certs, "device-"+fx.DeviceID+".key"))

	t.Run("a verified certificate is the credential, no key needed", func(t *testing.T) {
		r := post(valid, proxy.URL, fx.DeviceID)
		expect(t, r, 201, "")
		var got struct {
			DeviceID string `json:"device_id"`
		}
		r.JSON(t, &got)
		if got.DeviceID != fx.DeviceID {
			t.Fatalf("stored for %q, want %q", got.DeviceID, fx.DeviceID)
		}
	})
	t.Run("the header a client sends itself is replaced by the certificate's", func(t *testing.T) {
		expect(t, post(valid, proxy.URL, otherID, "X-Client-Cert-CN", "device:"+otherID), 403, "forbidden")
		expect(t, post(valid, proxy.URL, fx.DeviceID, "X-Client-Cert-CN", "device:"+otherID), 201, "")
	})
	t.Run("a verified certificate takes precedence over a bearer key", func(t *testing.T) {
		expect(t, post(valid, proxy.URL, fx.DeviceID, bearer(otherKey)...), 201, "")
	})
	t.Run("a certificate of another CA is refused", func(t *testing.T) {
		c := withCert(filepath.Join(rogue, "device-"+fx.DeviceID+".pem"), filepath.Join(rogue, "device-"+fx.DeviceID+".key"))
		expect(t, post(c, proxy.URL, fx.DeviceID), 401, "unauthorized")
		expect(t, post(c, proxy.URL, fx.DeviceID, bearer(fx.Key)...), 401, "unauthorized")
	})
	t.Run("an expired certificate is refused", func(t *testing.T) {
		expect(t, post(withCert(expired...), proxy.URL, fx.DeviceID), 401, "unauthorized")
	})
	t.Run("a certificate of an unknown device is invalid", func(t *testing.T) {
		c := withCert(filepath.Join(certs, "device-7b0d6f3e-58c4-4b8e-9a55-1f0c2d3e4f50.pem"), filepath.Join(certs, "device-7b0d6f3e-58c4-4b8e-9a55-1f0c2d3e4f50.key"))
		expect(t, post(c, proxy.URL, fx.DeviceID), 401, "unauthorized")
	})
	t.Run("without a certificate the header is removed", func(t *testing.T) {
		c := withCert()
		expect(t, post(c, proxy.URL, fx.DeviceID, "X-Client-Cert-CN", "device:"+fx.DeviceID), 401, "unauthorized")
		// The bearer key decides: the forged header names another device.
		expect(t, post(c, proxy.URL, otherID, "X-Client-Cert-CN", "device:"+fx.DeviceID, "Authorization", "Bearer "+otherKey), 201, "")
	})
	t.Run("a bearer device passes through unchanged", func(t *testing.T) {
		expect(t, post(withCert(), proxy.URL, fx.DeviceID, bearer(fx.Key)...), 201, "")
	})
	t.Run("only the proxy is a trusted peer", func(t *testing.T) {
		// Straight to furrow from 127.0.0.1, which FURROW_TRUSTED_PROXIES leaves out.
		expect(t, post(nil, api.URL, fx.DeviceID, "X-Client-Cert-CN", "device:"+fx.DeviceID), 401, "unauthorized")
		expect(t, post(nil, api.URL, otherID, "X-Client-Cert-CN", "device:"+fx.DeviceID, "Authorization", "Bearer "+otherKey), 201, "")
	})
	if strings.Contains(proxy.logs(), "X-Client-Cert-CN") {
		t.Fatalf("the proxy logged a header it should only set:\n%s", proxy.logs())
	}
}

// deviceCerts runs deploy/proxy/device-certs.sh, the operator's tool.
func deviceCerts(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("../deploy/proxy/device-certs.sh", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("device-certs.sh %v: %v\n%s", args, err, out)
	}
}

// expiredCert issues, from the device CA in dir, a certificate for device
// that expired an hour ago (openssl x509 cannot backdate one), and returns
// its certificate and key files.
func expiredCert(t *testing.T, dir, device string) []string {
	t.Helper()
	ca, err := loopback.LoadCert(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	return writeCert(t, filepath.Join(dir, "expired"), &x509.Certificate{
		Subject:     pkix.Name{CommonName: "device:" + device},
		NotBefore:   now.Add(-48 * time.Hour),
		NotAfter:    now.Add(-time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca)
}

// writeCert issues tmpl signed by parent and writes base.pem and base.key.
func writeCert(t *testing.T, base string, tmpl *x509.Certificate, parent *loopback.Cert) []string {
	t.Helper()
	c, err := loopback.Issue(tmpl, parent)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{base + ".pem", base + ".key"}
	if err := c.WriteFiles(files[0], files[1]); err != nil {
		t.Fatal(err)
	}
	return files
}

// proxy is a running HAProxy with the shipped configuration.
type proxy struct {
	URL    string
	roots  *x509.CertPool
	output testenv.Buffer
}

func (p *proxy) logs() string { return p.output.String() }

// startProxy runs haproxy with the shipped configuration, a server
// certificate of its own CA and the device CA, in front of upstream, and
// waits until it sees furrow ready.
func startProxy(t *testing.T, haproxy, dir, deviceCA, upstream string) *proxy {
	t.Helper()
	ca, err := loopback.SelfSigned("proxy test CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv := writeCert(t, filepath.Join(dir, "server"), &x509.Certificate{
		Subject:   pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca)
	bundle := filepath.Join(dir, "server-bundle.pem")
	if err := os.WriteFile(bundle, append(read(t, srv[0]), read(t, srv[1])...), 0o600); err != nil {
		t.Fatal(err)
	}

	addr := freeAddr(t)
	p := &proxy{URL: "https://" + addr, roots: ca.Pool()}
	cmd := exec.Command(haproxy, "-db", "-f", proxyConfig)
	cmd.Env = []string{
		"PROXY_BIND=" + addr, "PROXY_CERT=" + bundle, "PROXY_DEVICE_CA=" + deviceCA,
		"PROXY_UPSTREAM=" + upstream, "PROXY_UPSTREAMS=1", "PROXY_SOURCE=" + proxySource,
	}
	cmd.Stdout, cmd.Stderr = &p.output, &p.output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("haproxy output:\n%s", p.logs())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("haproxy exited:\n%s", p.logs())
		default:
		}
		if resp, err := p.client(t).Get(p.URL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy did not pass a ready furrow through in 60 s:\n%s", p.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// client returns an HTTPS client that trusts the proxy and presents the
// certificate and key files in pair, if given.
func (p *proxy) client(t *testing.T, pair ...string) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.roots, MinVersion: tls.VersionTLS12}
	if len(pair) == 2 {
		c, err := tls.LoadX509KeyPair(pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
