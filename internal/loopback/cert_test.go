package loopback

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// TestSelfSignedServesLoopback serves HTTPS with a self-signed certificate
// and reaches it by each loopback name, trusting the written PEM file alone.
func TestSelfSignedServesLoopback(t *testing.T) {
	c, err := SelfSigned("loopback test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "c.key")
	if err := c.WriteFiles(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadCert(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{loaded.TLS()}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusting client's failed handshake
	srv.StartTLS()
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.Pool()}}}
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		resp, err := client.Get("https://" + host + ":" + port + "/")
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("%s answered %d", host, resp.StatusCode)
		}
	}
	if _, err := (&http.Client{}).Get(srv.URL); err == nil {
		t.Error("a client that does not trust the certificate connected")
	}
}

// TestIssueChainsToParent checks that a certificate issued by a CA verifies
// against that CA and, once expired, no longer does.
func TestIssueChainsToParent(t *testing.T) {
	ca, err := SelfSigned("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	leaf, err := Issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: "server"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca)
	if err != nil {
		t.Fatal(err)
	}
	opts := x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if _, err := leaf.Leaf.Verify(opts); err != nil {
		t.Errorf("issued certificate does not verify: %v", err)
	}
	if leaf.Leaf.SerialNumber.Sign() <= 0 || leaf.Leaf.Issuer.CommonName != "test CA" {
		t.Errorf("serial %v, issuer %q", leaf.Leaf.SerialNumber, leaf.Leaf.Issuer.CommonName)
	}
	opts.CurrentTime = now.Add(2 * time.Hour)
	if _, err := leaf.Leaf.Verify(opts); err == nil {
		t.Error("an expired certificate verifies")
	}
	other, err := SelfSigned("other CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: other.Pool(), KeyUsages: opts.KeyUsages}); err == nil {
		t.Error("a certificate verifies against another CA")
	}
}
