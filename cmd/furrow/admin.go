package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/furrowhq/furrow/store"
)

func runMigrate(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if err := store.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	logger.Info("migrations applied")
	return nil
}

// runAdmin handles `furrow admin create-user --email E`: the app's identity
// system is outside this service, so operators and tests make users here.
func runAdmin(ctx context.Context, cfg Config, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "create-user" {
		return fmt.Errorf("admin: expected create-user: %w", errUsage)
	}
	fs := flag.NewFlagSet("furrow admin create-user", flag.ContinueOnError)
	fs.SetOutput(stdout)
	email := fs.String("email", "", "the new user's email")
	if err := fs.Parse(args[1:]); errors.Is(err, flag.ErrHelp) {
		return errHelp
	} else if err != nil {
		return errUsage
	}
	if *email == "" {
		return fmt.Errorf("admin create-user: --email is required: %w", errUsage)
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	u, token, err := db.CreateUser(ctx, *email)
	if err != nil {
		return fmt.Errorf("admin create-user: %w", err)
	}
	return json.NewEncoder(stdout).Encode(map[string]string{"id": u.ID.String(), "email": u.Email, "token": token})
}
