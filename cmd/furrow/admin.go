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

// adminCommands are the subcommands of `furrow admin`, each with a flag set.
var adminCommands = map[string]func(ctx context.Context, cfg Config, args []string, stdout io.Writer, log *slog.Logger) error{
	"create-user":  adminCreateUser,
	"seal-secrets": adminSealSecrets,
	"reseal":       adminReseal,
}

// runAdmin handles the `furrow admin` subcommands, which work on the
// database directly.
func runAdmin(ctx context.Context, cfg Config, args []string, stdout io.Writer, log *slog.Logger) error {
	if len(args) == 0 || adminCommands[args[0]] == nil {
		return fmt.Errorf("admin: expected create-user, seal-secrets or reseal: %w", errUsage)
	}
	return adminCommands[args[0]](ctx, cfg, args[1:], stdout, log)
}

// parseFlags parses args into fs, whose usage goes to stdout.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(stdout)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return errHelp
	} else if err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q: %w", fs.Name(), fs.Arg(0), errUsage)
	}
	return nil
}

// adminCreateUser handles `furrow admin create-user --email E`: the app's
// identity system is outside this service, so operators and tests make
// users here.
func adminCreateUser(ctx context.Context, cfg Config, args []string, stdout io.Writer, _ *slog.Logger) error {
	fs := flag.NewFlagSet("furrow admin create-user", flag.ContinueOnError)
	email := fs.String("email", "", "the new user's email")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
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
