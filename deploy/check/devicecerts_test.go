package check

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

const deviceCertsScript = "../proxy/device-certs.sh"

// requireTool fails t when the command tool is not on PATH and CI=true,
// since on CI the Debian package pkg is always there (essential, or
// installed by .ci/setup), and skips t loudly elsewhere. This module's
// tests run inside a go test without -v (internal/deploycheck), where a
// skip is not seen.
func requireTool(t *testing.T, tool, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err == nil {
		return
	}
	msg := fmt.Sprintf("no %s on PATH: install the Debian package %s", tool, pkg)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPING " + t.Name() + ": " + msg)
}

// deviceCerts runs deploy/proxy/device-certs.sh and returns its output and
// whether it succeeded.
func deviceCerts(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	out, err := exec.Command(deviceCertsScript, args...).CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("device-certs.sh %v: %v", args, err)
	}
	return string(out), err == nil
}

func mustDeviceCerts(t *testing.T, args ...string) {
	t.Helper()
	if out, ok := deviceCerts(t, args...); !ok {
		t.Fatalf("device-certs.sh %v failed:\n%s", args, out)
	}
}

func pemBlock(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := pem.Decode(b)
	if p == nil {
		t.Fatalf("%s holds no PEM block", file)
	}
	return p.Bytes
}

func parseCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(pemBlock(t, file))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return c
}

// crl reads dir/crl.pem and checks that dir's CA signed it.
func crl(t *testing.T, dir string) *x509.RevocationList {
	t.Helper()
	l, err := x509.ParseRevocationList(pemBlock(t, filepath.Join(dir, "crl.pem")))
	if err != nil {
		t.Fatalf("crl.pem: %v", err)
	}
	if err := l.CheckSignatureFrom(parseCert(t, filepath.Join(dir, "ca.pem"))); err != nil {
		t.Fatalf("crl.pem is not signed by the CA: %v", err)
	}
	return l
}

func revokedSerials(l *x509.RevocationList) []string {
	var out []string
	for _, e := range l.RevokedCertificateEntries {
		out = append(out, e.SerialNumber.Text(16))
	}
	return out
}

// TestDeviceCertsScript: the operator's tool makes a CA with a revocation
// list, never replaces a CA (not even once its key has been moved
// offline), revokes a device's certificates by the device's id or by file,
// and re-issues the list for as long as asked.
func TestDeviceCertsScript(t *testing.T) {
	requireTool(t, "openssl", "openssl")
	dir := filepath.Join(t.TempDir(), "device-ca")
	mustDeviceCerts(t, "ca", dir)
	ca := parseCert(t, filepath.Join(dir, "ca.pem"))
	if fi, err := os.Stat(filepath.Join(dir, "ca.key")); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("ca.key is readable by others (%v)", fi.Mode())
	}
	l := crl(t, dir)
	if len(l.RevokedCertificateEntries) != 0 {
		t.Errorf("a new CA's list revokes %v", revokedSerials(l))
	}
	if min := time.Now().AddDate(4, 11, 0); l.NextUpdate.Before(min) {
		t.Errorf("the list expires %s: once it does, every device certificate is refused", l.NextUpdate)
	}

	t.Run("an existing CA is never replaced", func(t *testing.T) {
		caPEM, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
		if out, ok := deviceCerts(t, "ca", dir); ok {
			t.Errorf("ca over an existing CA succeeded:\n%s", out)
		}
		// The key and the database moved offline, as advised: the folder
		// keeps what the proxy needs, and ca.pem is still the CA devices use.
		proxy := filepath.Join(t.TempDir(), "proxy")
		if err := os.Mkdir(proxy, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"ca.pem", "crl.pem"} {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if err := os.WriteFile(filepath.Join(proxy, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out, ok := deviceCerts(t, "ca", proxy); ok {
			t.Errorf("ca where ca.pem exists, without ca.key, succeeded:\n%s", out)
		}
		if now, _ := os.ReadFile(filepath.Join(proxy, "ca.pem")); !bytes.Equal(now, caPEM) {
			t.Error("ca.pem was replaced")
		}
	})

	t.Run("each CA has a name of its own", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other")
		mustDeviceCerts(t, "ca", other)
		if o := parseCert(t, filepath.Join(other, "ca.pem")); bytes.Equal(o.RawSubject, ca.RawSubject) {
			t.Errorf("two CAs named %q: their revocation lists would be confused", ca.Subject)
		}
	})

	const one, two = "0f2c5b8e-1a2b-4c3d-8e9f-0123456789ab", "7b0d6f3e-58c4-4b8e-9a55-1f0c2d3e4f50"
	mustDeviceCerts(t, "issue", dir, one)
	first := parseCert(t, filepath.Join(dir, "device-"+one+".pem")).SerialNumber
	mustDeviceCerts(t, "issue", dir, one) // a second certificate of the same device
	second := parseCert(t, filepath.Join(dir, "device-"+one+".pem")).SerialNumber
	mustDeviceCerts(t, "issue", dir, two)
	other := parseCert(t, filepath.Join(dir, "device-"+two+".pem"))
	if err := other.CheckSignatureFrom(ca); err != nil || other.Subject.CommonName != "device:"+two {
		t.Fatalf("device certificate %q: %v", other.Subject, err)
	}
	hex := func(n ...*big.Int) []string {
		var out []string
		for _, s := range n {
			out = append(out, s.Text(16))
		}
		slices.Sort(out)
		return out
	}

	t.Run("revoke by device id revokes every certificate of the device", func(t *testing.T) {
		before := crl(t, dir).Number
		mustDeviceCerts(t, "revoke", dir, one)
		l := crl(t, dir)
		got := revokedSerials(l)
		slices.Sort(got)
		if !slices.Equal(got, hex(first, second)) {
			t.Errorf("the list revokes %v, want both certificates of %s %v", got, one, hex(first, second))
		}
		if l.Number.Cmp(before) <= 0 {
			t.Errorf("the new list's number %s does not follow %s", l.Number, before)
		}
		mustDeviceCerts(t, "revoke", dir, one) // again: nothing more to revoke, not an error
	})
	t.Run("revoke by certificate file", func(t *testing.T) {
		mustDeviceCerts(t, "revoke", dir, filepath.Join(dir, "device-"+two+".pem"))
		got := revokedSerials(crl(t, dir))
		slices.Sort(got)
		if want := hex(first, second, other.SerialNumber); !slices.Equal(got, want) {
			t.Errorf("the list revokes %v, want %v", got, want)
		}
	})
	t.Run("a certificate of another CA or an unknown device is not revoked", func(t *testing.T) {
		foreign := filepath.Join(t.TempDir(), "foreign")
		mustDeviceCerts(t, "ca", foreign)
		mustDeviceCerts(t, "issue", foreign, one)
		if out, ok := deviceCerts(t, "revoke", dir, filepath.Join(foreign, "device-"+one+".pem")); ok {
			t.Errorf("revoked another CA's certificate:\n%s", out)
		}
		if out, ok := deviceCerts(t, "revoke", dir, "3f1e2d3c-4b5a-4697-8877-665544332211"); ok {
			t.Errorf("revoking a device without certificates succeeded:\n%s", out)
		}
	})
	t.Run("crl re-issues the list", func(t *testing.T) {
		mustDeviceCerts(t, "crl", dir, "30")
		l := crl(t, dir)
		if d := time.Until(l.NextUpdate); d < 29*24*time.Hour || d > 31*24*time.Hour {
			t.Errorf("crl DIR 30: the list expires in %s", d)
		}
		if len(l.RevokedCertificateEntries) != 3 {
			t.Errorf("the re-issued list revokes %v, want the 3 revoked", revokedSerials(l))
		}
		mustDeviceCerts(t, "crl", dir)
		if l := crl(t, dir); l.NextUpdate.Before(time.Now().AddDate(4, 11, 0)) {
			t.Errorf("crl DIR: the list expires %s, want the default of five years", l.NextUpdate)
		}
	})
}

// TestDeviceCertsFailedIssueKeepsTheDevicesPair: an issue that fails, on a
// DAYS that is no number of days or in openssl ca, leaves the device's key
// and certificate as they were, the key still the certificate's. (issue
// wrote the new key over the old one before openssl ca ran, so a failed
// issue left a key that no longer matched the device's certificate.)
func TestDeviceCertsFailedIssueKeepsTheDevicesPair(t *testing.T) {
	requireTool(t, "openssl", "openssl")
	dir := filepath.Join(t.TempDir(), "device-ca")
	mustDeviceCerts(t, "ca", dir)
	const id = "0f2c5b8e-1a2b-4c3d-8e9f-0123456789ab"
	mustDeviceCerts(t, "issue", dir, id)
	keyFile, certFile := filepath.Join(dir, "device-"+id+".key"), filepath.Join(dir, "device-"+id+".pem")
	key, _ := os.ReadFile(keyFile)
	cert, _ := os.ReadFile(certFile)
	unchanged := func(t *testing.T, what string) {
		t.Helper()
		if now, _ := os.ReadFile(keyFile); !bytes.Equal(now, key) {
			t.Errorf("%s replaced the device's key", what)
		}
		if now, _ := os.ReadFile(certFile); !bytes.Equal(now, cert) {
			t.Errorf("%s replaced the device's certificate", what)
		}
		k, err := x509.ParsePKCS8PrivateKey(pemBlock(t, keyFile))
		if err != nil {
			t.Fatalf("%s: %v", keyFile, err)
		}
		if pub := k.(crypto.Signer).Public().(interface{ Equal(crypto.PublicKey) bool }); !pub.Equal(parseCert(t, certFile).PublicKey) {
			t.Errorf("after %s the device's key is not its certificate's", what)
		}
	}

	t.Run("DAYS is no number of days", func(t *testing.T) {
		for _, days := range []string{"abc", "0", "-5", "12x"} {
			out, err := exec.Command(deviceCertsScript, "issue", dir, id, days).CombinedOutput()
			// 2, as crl answers the same mistake: a usage error.
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Errorf("issue with DAYS %q: %v, want exit status 2:\n%s", days, err, out)
			}
			unchanged(t, "issue with DAYS "+days)
		}
	})
	t.Run("openssl ca fails", func(t *testing.T) {
		// Another CA's key beside ca.pem: openssl ca refuses to sign.
		other := filepath.Join(t.TempDir(), "other")
		mustDeviceCerts(t, "ca", other)
		own, _ := os.ReadFile(filepath.Join(dir, "ca.key"))
		foreign, _ := os.ReadFile(filepath.Join(other, "ca.key"))
		if err := os.WriteFile(filepath.Join(dir, "ca.key"), foreign, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(filepath.Join(dir, "ca.key"), own, 0o600)
		if out, ok := deviceCerts(t, "issue", dir, id); ok {
			t.Fatalf("issue with another CA's key succeeded:\n%s", out)
		}
		unchanged(t, "a failed openssl ca")
	})
}
