package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/furrowhq/furrow/store"
)

const sealSecretsHelp = `usage: furrow admin seal-secrets [--batch N]

Seal the webhook signing secrets stored unsealed with the first key of
FURROW_SECRET_KEYS (or FURROW_SECRET_KEYS_FILE), so that a database dump,
replica or backup holds no usable secret.

It commits every --batch rows, skipping rows other transactions hold and
taking them up in a later pass, so it runs beside serving replicas and
flowing deliveries, and beside another run of itself. Interrupted, it is
resumed by running it again; run on a sealed database, it does nothing.
Progress is logged on stderr; the summary is printed on stdout as JSON
(see summary below).

Give every serve and worker the key ring first, so that they can open
what it seals.

flags:
`

// sealSummaryHelp describes the summary's keys, after the flags of either
// command's help.
const sealSummaryHelp = `
summary:
  key_id    the ring's first key, which sealed every secret written
  sealed    secrets that were stored unsealed and are now sealed
  resealed  secrets sealed with another key and now with key_id
  cleared   previous secrets whose overlap had ended, removed
  batches   transactions that rewrote rows
  counted   whether the secrets could be counted after the run; when
            false, by_key and unsealed are left out
  by_key    the stored secrets sealed with each key, after the run
  unsealed  the stored secrets not sealed, after the run
`

const resealHelp = `usage: furrow admin reseal [--batch N]

Re-seal every webhook signing secret that is not sealed with the first key
of FURROW_SECRET_KEYS (or FURROW_SECRET_KEYS_FILE): those sealed with
another key of the ring, and those stored unsealed.

To rotate the key that seals secrets, with deliveries flowing:
  1. put a new key in front of the ring (new:KEY,old:KEY) on every serve
     and worker, and restart them: the new key seals, the old still opens;
  2. run furrow admin reseal with the same ring, until by_key names the
     new key alone;
  3. drop the old key from the ring and restart the processes.

It commits every --batch rows, skipping rows other transactions hold and
taking them up in a later pass; interrupted, it is resumed by running it
again, and run twice it does nothing the second time. A secret sealed with
a key the ring does not hold stops it with an error naming that key.
Progress is logged on stderr; the summary is printed on stdout as JSON
(see summary below).

flags:
`

// sealSummary is the JSON the sealing commands print (sealSummaryHelp).
type sealSummary struct {
	store.SealReport
	// Counted says whether ByKey and Unsealed were read. They are left
	// out when not, so that a failed count never reads as "0 unsealed",
	// which operators check for.
	Counted bool `json:"counted"`
	// ByKey counts the sealed secrets by key id after the run; Unsealed
	// the others.
	ByKey    map[string]int64 `json:"by_key,omitzero"`
	Unsealed *int64           `json:"unsealed,omitzero"`
}

// secretsByKey counts the stored secrets after a run; a variable so that
// tests can make the count fail.
var secretsByKey = (*store.DB).SecretsByKey

func adminSealSecrets(ctx context.Context, load settings, args []string, stdout io.Writer, log *slog.Logger) error {
	return adminSeal(ctx, load, args, stdout, log, "seal-secrets", sealSecretsHelp, false)
}

func adminReseal(ctx context.Context, load settings, args []string, stdout io.Writer, log *slog.Logger) error {
	return adminSeal(ctx, load, args, stdout, log, "reseal", resealHelp, true)
}

// adminSeal runs SealSecrets as `furrow admin <name>` and prints its summary.
func adminSeal(ctx context.Context, load settings, args []string, stdout io.Writer, log *slog.Logger, name, help string, reseal bool) error {
	fs := flag.NewFlagSet("furrow admin "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), help)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), sealSummaryHelp)
	}
	batch := fs.Int("batch", store.DefaultSealBatch, "rows re-written per transaction")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *batch <= 0 {
		return fmt.Errorf("admin %s: --batch must be positive: %w", name, errUsage)
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	if cfg.SecretKeys == nil {
		return fmt.Errorf("admin %s: FURROW_SECRET_KEYS is not set, so there is no key to seal with", name)
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, storeOptions(cfg, log))
	if err != nil {
		return err
	}
	defer db.Close()
	rep, err := db.SealSecrets(ctx, store.SealOptions{Reseal: reseal, BatchSize: *batch, Progress: func(r store.SealReport) {
		log.Info(name+" progress", "key_id", r.KeyID, "sealed", r.Sealed, "resealed", r.Resealed, "cleared", r.Cleared, "batches", r.Batches)
	}})
	sum := sealSummary{SealReport: rep}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	byKey, cerr := secretsByKey(db, cctx)
	if cerr == nil {
		unsealed := byKey[""]
		delete(byKey, "")
		sum.Counted, sum.ByKey, sum.Unsealed = true, byKey, &unsealed
	}
	if jerr := json.NewEncoder(stdout).Encode(sum); jerr != nil {
		return jerr
	}
	if err != nil {
		return fmt.Errorf("admin %s: %w", name, err)
	}
	if cerr != nil {
		return fmt.Errorf("admin %s: count the secrets: %w", name, cerr)
	}
	return nil
}
