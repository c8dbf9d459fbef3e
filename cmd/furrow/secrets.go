package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/furrowhq/furrow/keyring"
	"github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/telemetry"
)

// devKeyFile is the file in FURROW_DEV_DATA_DIR holding `furrow dev`'s key
// ring when none is set.
const devKeyFile = "secret-keys"

// loadSecretKeys reads the key ring from FURROW_SECRET_KEYS, or from the
// file FURROW_SECRET_KEYS_FILE names (for container secrets); nil when
// neither is set. Errors name the setting and never quote key material.
func loadSecretKeys(getenv func(string) string) (*keyring.Ring, error) {
	inline, file := getenv("FURROW_SECRET_KEYS"), getenv("FURROW_SECRET_KEYS_FILE")
	switch {
	case inline != "" && file != "":
		return nil, errors.New("FURROW_SECRET_KEYS and FURROW_SECRET_KEYS_FILE are both set; set one")
	case inline != "":
		r, err := keyring.Parse(inline)
		if err != nil {
			return nil, fmt.Errorf("FURROW_SECRET_KEYS: %w", err)
		}
		return r, nil
	case file != "":
		r, err := readRing(file)
		if err != nil {
			return nil, fmt.Errorf("FURROW_SECRET_KEYS_FILE: %w", err)
		}
		return r, nil
	}
	return nil, nil
}

// readRing parses the key ring written in file.
func readRing(file string) (*keyring.Ring, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	r, err := keyring.Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return r, nil
}

// devSecretKeys returns the key ring `furrow dev` keeps in dir, making a
// one-key ring readable by the owner only on first use. The file is a ring
// like FURROW_SECRET_KEYS, so a key can be put in front of it by hand.
func devSecretKeys(dir string, log *slog.Logger) (*keyring.Ring, error) {
	path := filepath.Join(dir, devKeyFile)
	r, err := readRing(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return r, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readRing(path) // another dev process made it first
	} else if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(f, "dev:%s\n", keyring.NewKey())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	log.Info("made a key ring sealing webhook secrets", "file", path)
	return readRing(path)
}

// warnUnsealed says loudly, at start, that webhook secrets are stored
// unsealed because no key ring is set.
func warnUnsealed(cfg Config, log *slog.Logger) {
	if cfg.SecretKeys == nil {
		log.Warn("FURROW_SECRET_KEYS is not set: webhook signing secrets are stored unsealed, readable by anyone holding a database dump, replica or backup; set a key ring and run `furrow admin seal-secrets`")
	}
}

// watchSecrets exports the webhook secrets' sealing state.
func watchSecrets(m *telemetry.Metrics, db *store.DB, log *slog.Logger) {
	m.WatchSecrets(db, db.Sealing(), log)
}
