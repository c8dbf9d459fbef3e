package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// lookHAProxy returns the haproxy binary.
func lookHAProxy(t *testing.T) string {
	t.Helper()
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		haproxy = "/usr/sbin/haproxy" // Debian's place, often outside a user's PATH
		if _, err := os.Stat(haproxy); err != nil {
			t.Fatalf("haproxy is not installed (Debian package haproxy; .ci/run installs it): %v", err)
		}
	}
	return haproxy
}

// TestDeviceCertificateProxy starts the shipped HAProxy configuration with a
// device CA made by deploy/proxy/device-certs.sh in front of `furrow serve`
// and checks the device-certificate scheme (docs/devices.md) through it,
// revocation (docs/operating/deploy.md) included.
func TestDeviceCertificateProxy(t *testing.T) {
	testenv.SkipShort(t, "HAProxy in front of furrow serve")
	haproxy := lookHAProxy(t)
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
	// otherID has a key and a certificate: two credentials.
	deviceCerts(t, "issue", certs, otherID)
	deviceCerts(t, "issue", certs, "7b0d6f3e-58c4-4b8e-9a55-1f0c2d3e4f50") // valid, but no such device
	rogue := filepath.Join(dir, "rogue")
	deviceCerts(t, "ca", rogue)
	deviceCerts(t, "issue", rogue, fx.DeviceID)
	expired := expiredCert(t, certs, fx.DeviceID)

	proxy := startProxy(t, haproxy, dir, certs, strings.TrimPrefix(api.URL, "http://"))
	post := func(c *http.Client, base, device string, headers ...string) response {
		return do(t, c, "POST", base+"/api/metric-values", reading(device, 21.5), headers...)
	}
	withCert := func(pair ...string) *http.Client { return proxy.client(t, pair...) }
	certOf := func(device string) []string {
		return []string{filepath.Join(certs, "device-"+device+".pem"), filepath.Join(certs, "device-"+device+".key")}
	}
	valid := withCert(certOf(fx.DeviceID)...)

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
	t.Run("a certificate of a CA that copies the device CA's name is refused", func(t *testing.T) {
		// The proxy names its CA to every client, and revocation lists are
		// found by their CA's name: an impostor CA of that name must not
		// get its certificates through.
		c := withCert(impostorCert(t, certs, dir, fx.DeviceID)...)
		req, err := http.NewRequest("POST", proxy.URL+"/api/metric-values", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			return // refused in the TLS handshake
		}
		defer resp.Body.Close()
		if resp.StatusCode != 401 {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("status %d, want 401 or a refused handshake; body %s", resp.StatusCode, body)
		}
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
	t.Run("a new key leaves the certificate valid", func(t *testing.T) {
		r := do(t, nil, "POST", api.URL+"/api/farms/"+fx.FarmID+"/devices/"+fx.DeviceID+"/keys", nil, bearer(fx.Token)...)
		expect(t, r, 201, "")
		expect(t, post(withCert(), proxy.URL, fx.DeviceID, bearer(fx.Key)...), 401, "unauthorized")
		expect(t, post(valid, proxy.URL, fx.DeviceID), 201, "")
	})
	t.Run("a revoked certificate is refused after a reload, another device's still works", func(t *testing.T) {
		expect(t, post(withCert(certOf(otherID)...), proxy.URL, otherID), 201, "")
		deviceCerts(t, "revoke", certs, otherID)
		proxy.reload(t)
		// The reload takes effect once the new worker accepts; connections
		// to the former one keep its list, so each try is a new connection.
		deadline := time.Now().Add(30 * time.Second)
		for {
			c := withCert(certOf(otherID)...)
			c.Transport.(*http.Transport).DisableKeepAlives = true
			r := post(c, proxy.URL, otherID)
			if r.Status == 401 {
				expect(t, r, 401, "unauthorized")
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the revoked certificate still gets %d %s 30 s after the reload", r.Status, r.Body)
			}
			time.Sleep(500 * time.Millisecond) // well under the rate limit
		}
		// Another device's certificate is unaffected, and so is the revoked
		// device's key: the two credentials are separate. (New clients: the
		// former worker closes the connections it had.)
		expect(t, post(withCert(certOf(fx.DeviceID)...), proxy.URL, fx.DeviceID), 201, "")
		expect(t, post(withCert(), proxy.URL, otherID, bearer(otherKey)...), 201, "")
		expect(t, post(withCert(certOf(otherID)...), proxy.URL, otherID, bearer(otherKey)...), 401, "unauthorized")
	})
	if strings.Contains(proxy.logs(), "X-Client-Cert-CN") {
		t.Fatalf("the proxy logged a header it should only set:\n%s", proxy.logs())
	}
}

// TestProxyErrorsWithoutFurrow: with no furrow serve behind it, the shipped
// proxy answers a device 503 in Furrow's {error, reason} shape, from its
// error files, not HAProxy's HTML page.
func TestProxyErrorsWithoutFurrow(t *testing.T) {
	testenv.SkipShort(t, "HAProxy with no furrow serve behind it")
	haproxy := lookHAProxy(t)
	dir := t.TempDir()
	certs := filepath.Join(dir, "devices")
	deviceCerts(t, "ca", certs)
	proxy := launchProxy(t, haproxy, dir, certs, freeAddr(t)) // nothing listens there
	c := proxy.client(t)
	deadline := time.Now().Add(30 * time.Second)
	var resp *http.Response
	for {
		proxy.checkRunning(t)
		req, err := http.NewRequest("POST", proxy.URL+"/api/metric-values", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if resp, err = c.Do(req); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy did not answer in 30 s: %v\n%s", err, proxy.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 {
		t.Fatalf("status %d, want 503; body %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json; body %s", ct, body)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" {
		t.Errorf("no Retry-After on the 503")
	}
	var got map[string]string
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("the 503's body is not a JSON object of strings: %v\n%s", err, body)
	}
	if len(got) != 2 || got["error"] != "internal_error" || got["reason"] == "" {
		t.Errorf("the 503's body is %s, want {\"error\": \"internal_error\", \"reason\": ...}", body)
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

// impostorCert makes a CA of its own with the very name of the device CA
// in dir, issues from it a certificate for device as device-certs.sh
// would, and returns its certificate and key files, written in out.
func impostorCert(t *testing.T, dir, out, device string) []string {
	t.Helper()
	deviceCA, err := loopback.LoadCert(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca, err := loopback.Issue(&x509.Certificate{
		RawSubject: deviceCA.Leaf.RawSubject,
		NotBefore:  now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return writeCert(t, filepath.Join(out, "impostor"), &x509.Certificate{
		Subject:   pkix.Name{CommonName: "device:" + device},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
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
	cmd    *exec.Cmd
	exited chan struct{}
}

func (p *proxy) logs() string { return p.output.String() }

// startProxy runs haproxy with the shipped configuration, a server
// certificate of its own CA and the device CA and revocation list of the
// folder certs (ca.pem, crl.pem), in front of upstream, and waits until it
// sees furrow ready.
func startProxy(t *testing.T, haproxy, dir, certs, upstream string) *proxy {
	t.Helper()
	p := launchProxy(t, haproxy, dir, certs, upstream)
	deadline := time.Now().Add(60 * time.Second)
	for {
		p.checkRunning(t)
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

// launchProxy starts haproxy as startProxy does, without waiting for
// anything. It runs in master-worker mode, as the official image runs it,
// so that SIGUSR2 reloads it.
func launchProxy(t *testing.T, haproxy, dir, certs, upstream string) *proxy {
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
	p := &proxy{URL: "https://" + addr, roots: ca.Pool(), exited: make(chan struct{})}
	p.cmd = exec.Command(haproxy, "-W", "-db", "-f", proxyConfig)
	p.cmd.Env = []string{
		"PROXY_BIND=" + addr, "PROXY_CERT=" + bundle,
		"PROXY_DEVICE_CA=" + filepath.Join(certs, "ca.pem"), "PROXY_DEVICE_CRL=" + filepath.Join(certs, "crl.pem"),
		"PROXY_UPSTREAM=" + upstream, "PROXY_UPSTREAMS=1", "PROXY_SOURCE=" + proxySource,
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.output, &p.output
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		// SIGTERM: the master stops its workers too.
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("haproxy output:\n%s", p.logs())
		}
	})
	return p
}

// checkRunning fails t if haproxy has exited.
func (p *proxy) checkRunning(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("haproxy exited:\n%s", p.logs())
	default:
	}
}

// reload asks haproxy to reload, as an operator does after installing a
// new revocation list: SIGUSR2 to the master process.
func (p *proxy) reload(t *testing.T) {
	t.Helper()
	p.checkRunning(t)
	if err := p.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
}

// client returns an HTTPS client that trusts the proxy and presents the
// certificate and key files in pair, if given, whatever CAs the proxy says
// it accepts (as curl does; Go's default would leave out a certificate of
// another CA, and the proxy would never see it).
func (p *proxy) client(t *testing.T, pair ...string) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.roots, MinVersion: tls.VersionTLS12}
	if len(pair) == 2 {
		c, err := tls.LoadX509KeyPair(pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
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
