package loopback

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// Cert is a certificate and its private key.
type Cert struct {
	Leaf *x509.Certificate
	Key  crypto.Signer
}

// SelfSigned returns a new certificate named name for localhost, 127.0.0.1
// and ::1, valid from an hour ago for validity. It is its own CA: a server
// presents it, and a client trusts it as its only root.
func SelfSigned(name string, validity time.Duration) (*Cert, error) {
	now := time.Now()
	return Issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
}

// Issue makes a certificate from tmpl for a new P-256 key, signed by
// parent, or by the new key itself when parent is nil. Without a serial
// number in tmpl it gets a random one.
func Issue(tmpl *x509.Certificate, parent *Cert) (*Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	t := *tmpl
	if t.SerialNumber == nil {
		if t.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128)); err != nil {
			return nil, err
		}
	}
	signer, signerKey := &t, crypto.Signer(key)
	if parent != nil {
		signer, signerKey = parent.Leaf, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, &t, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("issue certificate %q: %w", t.Subject.CommonName, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Cert{Leaf: leaf, Key: key}, nil
}

// LoadCert reads a PEM certificate and its PEM key.
func LoadCert(certFile, keyFile string) (*Cert, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("load certificate: the key cannot sign")
	}
	return &Cert{Leaf: pair.Leaf, Key: key}, nil
}

// TLS returns c for a tls.Config.
func (c *Cert) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{c.Leaf.Raw}, PrivateKey: c.Key, Leaf: c.Leaf}
}

// Pool returns a pool that trusts c alone.
func (c *Cert) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.Leaf)
	return p
}

// CertPEM returns the certificate as PEM.
func (c *Cert) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Leaf.Raw})
}

// KeyPEM returns the private key as PKCS #8 PEM.
func (c *Cert) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// WriteFiles writes the certificate to certFile, readable by anyone, and,
// unless keyFile is "", the key to keyFile, readable by its owner only.
func (c *Cert) WriteFiles(certFile, keyFile string) error {
	if err := os.WriteFile(certFile, c.CertPEM(), 0o644); err != nil {
		return fmt.Errorf("write certificate: %w", err)
	}
	if keyFile == "" {
		return nil
	}
	key, err := c.KeyPEM()
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	return nil
}
