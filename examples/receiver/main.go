// Command receiver is an example endpoint for Furrow webhooks. It verifies
// each delivery's signature over the raw body, acknowledges at once with
// 204, drops events it has already seen (deliveries are at-least-once), and
// prints the events from a separate goroutine, where a real receiver would
// do its slow work.
//
//	WEBHOOK_SECRET=whsec_... go run ./examples/receiver -addr :9000
//	WEBHOOK_SECRET=whsec_new...,whsec_old... go run ./examples/receiver   # while rotating
//	WEBHOOK_SECRET=whsec_... go run ./examples/receiver -self-signed /tmp/receiver-ca.pem
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/furrowhq/furrow/internal/loopback"
)

type config struct {
	addr       string
	path       string
	secrets    []string
	certFile   string
	keyFile    string
	selfSigned string
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := parseFlags(os.Args[1:], os.Getenv("WEBHOOK_SECRET"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, log); err != nil {
		log.Error("receiver stopped", "err", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, envSecret string) (config, error) {
	var c config
	var secrets string
	fs := flag.NewFlagSet("receiver", flag.ContinueOnError)
	fs.StringVar(&c.addr, "addr", ":9000", "listen address")
	fs.StringVar(&c.path, "path", "/webhooks/furrow", "path that receives deliveries")
	fs.StringVar(&secrets, "secret", envSecret, "webhook signing secret, or several separated by commas while it is rotated (default $WEBHOOK_SECRET; prefer the variable, flags show in ps)")
	fs.StringVar(&c.certFile, "cert", "", "TLS certificate file; with -key serves HTTPS")
	fs.StringVar(&c.keyFile, "key", "", "TLS key file")
	fs.StringVar(&c.selfSigned, "self-signed", "", "serve HTTPS with a fresh self-signed certificate for localhost, written to this PEM file for FURROW_WEBHOOK_CA_FILE")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.secrets = splitSecrets(secrets)
	switch {
	case len(c.secrets) == 0:
		return c, errors.New("receiver: set WEBHOOK_SECRET (or -secret) to the webhook's signing secret")
	case (c.certFile == "") != (c.keyFile == ""):
		return c, errors.New("receiver: -cert and -key go together")
	case c.certFile != "" && c.selfSigned != "":
		return c, errors.New("receiver: use either -cert/-key or -self-signed")
	}
	return c, nil
}

func run(ctx context.Context, cfg config, out io.Writer, log *slog.Logger) error {
	rc := newReceiver(cfg.secrets, log)
	go rc.work(out)
	defer rc.stop()

	mux := http.NewServeMux()
	mux.Handle("POST "+cfg.path, rc)
	srv := &http.Server{Addr: cfg.addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	tlsOn, err := configureTLS(srv, cfg)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		log.Info("receiving webhooks", "addr", cfg.addr, "path", cfg.path, "https", tlsOn)
		if tlsOn {
			errc <- srv.ListenAndServeTLS(cfg.certFile, cfg.keyFile)
		} else {
			errc <- srv.ListenAndServe()
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// splitSecrets reads a comma-separated list of secrets, blanks ignored.
// Secrets never hold a comma: they are whsec_ and base64.
func splitSecrets(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// selfSigned makes a certificate for localhost, 127.0.0.1 and ::1, valid
// for a year, and writes it as PEM to caPath so Furrow can trust it through
// FURROW_WEBHOOK_CA_FILE. The key stays in memory.
func selfSigned(caPath string) (tls.Certificate, error) {
	cert, err := loopback.SelfSigned("furrow example receiver", 365*24*time.Hour)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := cert.WriteFiles(caPath, ""); err != nil {
		return tls.Certificate{}, fmt.Errorf("receiver: %w", err)
	}
	return cert.TLS(), nil
}

// configureTLS reports whether srv serves HTTPS, installing a self-signed
// certificate when asked for one.
func configureTLS(srv *http.Server, cfg config) (bool, error) {
	if cfg.selfSigned == "" {
		return cfg.certFile != "", nil
	}
	cert, err := selfSigned(cfg.selfSigned)
	if err != nil {
		return false, err
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return true, nil
}
