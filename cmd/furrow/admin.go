package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
)

// runMigrate is `furrow migrate`, on a connection bounded as serve's are.
func runMigrate(ctx context.Context, cfg Config, logger *slog.Logger) error {
	opts := store.MigrateOptions{ConnectTimeout: cfg.Bounds.Connect, DeadConnTimeout: cfg.Bounds.DeadConn, Logger: logger}
	if err := store.MigrateWith(ctx, cfg.DatabaseURL, opts); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	logger.Info("migrations applied")
	return nil
}

// adminCommands are the subcommands of `furrow admin`, each with a flag set.
var adminCommands = map[string]func(ctx context.Context, load settings, args []string, stdout io.Writer, log *slog.Logger) error{
	"create-user":  adminCreateUser,
	"seal-secrets": adminSealSecrets,
	"reseal":       adminReseal,
}

// runAdmin handles the `furrow admin` subcommands, which work on the
// database directly.
func runAdmin(ctx context.Context, load settings, args []string, stdout io.Writer, log *slog.Logger) error {
	if len(args) == 0 || adminCommands[args[0]] == nil {
		return fmt.Errorf("admin: expected create-user, seal-secrets or reseal: %w", errUsage)
	}
	return adminCommands[args[0]](ctx, load, args[1:], stdout, log)
}

// parseFlags parses args into fs, whose usage goes to stdout when asked
// for. A bad flag is a usage error naming it; what the flag package wrote
// about it is dropped, since main prints the error.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := fs.Parse(args)
	fs.SetOutput(stdout)
	name := strings.TrimPrefix(fs.Name(), "furrow ")
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = out.WriteTo(stdout)
		return errHelp
	case err != nil:
		return fmt.Errorf("%s: %v (%s --help lists its flags): %w", name, err, fs.Name(), errUsage)
	case fs.NArg() > 0:
		return fmt.Errorf("%s: unexpected argument %q: %w", name, fs.Arg(0), errUsage)
	}
	return nil
}

// adminCreateUser handles `furrow admin create-user --email E`: the app's
// identity system is outside this service, so operators and tests make
// users here.
func adminCreateUser(ctx context.Context, load settings, args []string, stdout io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("furrow admin create-user", flag.ContinueOnError)
	email := fs.String("email", "", "the new user's email")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *email == "" {
		return fmt.Errorf("admin create-user: --email is required: %w", errUsage)
	}
	if err := furrow.CheckEmail(*email); err != nil {
		return fmt.Errorf("admin create-user: --email %q: %s: %w", *email, furrow.ErrorMessage(err), errUsage)
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	// The configured options, so that the connection bounds hold here too
	// and the user is written as serve would write it.
	db, err := store.Open(ctx, cfg.DatabaseURL, storeOptions(cfg, log))
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
