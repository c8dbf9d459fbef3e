package main

import (
	"crypto/rand"
	"encoding/hex"
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
// Rings made before keys had ids of their own (id "dev") are read as they
// are.
func devSecretKeys(dir string, log *slog.Logger) (*keyring.Ring, error) {
	path := filepath.Join(dir, devKeyFile)
	r, err := readRing(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return r, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	id, err := newDevKeyID()
	if err != nil {
		return nil, err
	}
	switch err := writeNew(path, fmt.Sprintf("%s:%s\n", id, keyring.NewKey())); {
	case errors.Is(err, fs.ErrExist):
		return readRing(path) // another dev process made it first
	case err != nil:
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	log.Info("made a key ring sealing webhook secrets", "file", path, "key_id", id)
	return readRing(path)
}

// newDevKeyID returns a key id of its own for a new dev ring: a ring made
// again after the data directory was deleted must not reuse the old id, or
// the secrets the old key sealed would be reported as altered rather than
// as sealed with a key the ring does not hold.
func newDevKeyID() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "dev-" + hex.EncodeToString(b), nil
}

// writeNew writes content to path, mode 0600, unless path exists
// (fs.ErrExist). The file appears whole or not at all: it is written and
// synced under another name, then linked into place, which, unlike a
// rename, never replaces a file another process made meanwhile.
func writeNew(path, content string) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err = tmp.Chmod(0o600); err == nil {
		if _, err = tmp.WriteString(content); err == nil {
			err = tmp.Sync()
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return err
	} else if err != nil {
		// A file system without hard links: rename, as atomic, but it
		// would replace a file made meanwhile.
		if err := os.Rename(tmp.Name(), path); err != nil {
			return err
		}
	}
	// The new name is durable once its directory is synced.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
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
