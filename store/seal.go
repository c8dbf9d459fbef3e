package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DefaultSealBatch is the number of webhook rows SealSecrets rewrites in
// one transaction unless told otherwise.
const DefaultSealBatch = 500

// Bounds of SealSecrets' wait for rows other transactions hold.
const (
	sealIdlePause  = 200 * time.Millisecond
	sealIdlePasses = 50
)

// SealOptions says what SealSecrets rewrites and how.
type SealOptions struct {
	// Reseal also rewrites secrets sealed with a key other than the ring's
	// first; otherwise only unsealed secrets are sealed.
	Reseal bool
	// BatchSize is the rows rewritten per transaction; default
	// DefaultSealBatch.
	BatchSize int
	// Progress, when set, is called after each committed batch with the
	// running totals.
	Progress func(SealReport)
}

// SealReport counts what SealSecrets did.
type SealReport struct {
	// KeyID is the ring's first key, which sealed every rewritten secret.
	KeyID string `json:"key_id"`
	// Sealed counts secrets (current and previous ones) that were stored
	// unsealed, Resealed those sealed with another key.
	Sealed   int `json:"sealed"`
	Resealed int `json:"resealed"`
	// Cleared counts previous secrets whose overlap had ended, removed
	// rather than sealed.
	Cleared int `json:"cleared"`
	// Batches counts the committed transactions that rewrote rows.
	Batches int `json:"batches"`
}

// ErrNoKeyRing is returned by SealSecrets on a DB opened without Keys.
var ErrNoKeyRing = errors.New("store: no key ring is configured, so there is nothing to seal with")

// SealSecrets seals the stored webhook secrets, the previous secrets of
// rotations included, with the key ring's first key: the unsealed ones,
// and with Reseal also those sealed with another key. Previous secrets
// whose overlap has ended are cleared instead. It commits every BatchSize
// rows, locking them with SKIP LOCKED, so that it runs beside serving and
// delivering processes and beside other runs of itself, and an
// interrupted run is resumed by running it again.
// A row another transaction holds is taken up in a later pass; it returns
// once no row is left to do, or with an error when rows stayed held for
// sealIdlePasses passes. A secret that does not open stops it with an
// error naming the webhook and the key. Before it writes anything, it
// checks that the ring's first key opens a secret already sealed under
// that key's id, if there is one (ErrPrimaryMismatch).
func (db *DB) SealSecrets(ctx context.Context, opts SealOptions) (SealReport, error) {
	if db.keys == nil {
		return SealReport{}, ErrNoKeyRing
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultSealBatch
	}
	rep := SealReport{KeyID: db.keys.Primary()}
	if err := db.checkKey(ctx, rep.KeyID); err != nil {
		return rep, fmt.Errorf("%w; nothing was written", err)
	}
	s := sealer{db: db, opts: opts, rep: &rep, now: db.nowMs()}
	for idle := 0; ; {
		changed, err := s.pass(ctx)
		if err != nil {
			return rep, err
		}
		left, err := s.left(ctx)
		if err != nil || left == 0 {
			return rep, err
		}
		if changed > 0 {
			idle = 0
			continue
		}
		if idle++; idle >= sealIdlePasses {
			return rep, fmt.Errorf("store: %d webhook secrets are still to do: their rows stayed held by other transactions, or processes whose first key is another keep writing them; run again", left)
		}
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(sealIdlePause):
		}
	}
}

// ErrKeyMismatch is returned by CheckKeyRing when a secret stored as
// sealed with the id of a key of the ring does not open with that key: the ring holds another
// key under an id already used, and sealing with it would leave secrets
// that no kept key opens (a ring cannot hold one id twice).
var ErrKeyMismatch = errors.New("store: the key ring holds another key under an id that sealed stored secrets; a new key needs an id of its own")

// ErrPrimaryMismatch is the ErrKeyMismatch of the ring's first key, the
// one that seals; SealSecrets returns it before writing anything.
var ErrPrimaryMismatch = fmt.Errorf("%w: the key ring's first key is not the key that sealed the stored secrets under its id", ErrKeyMismatch)

// checkKey opens one stored secret sealed under keyID, a key of the ring,
// and fails, naming the key and the webhook, when it does not open: with
// ErrPrimaryMismatch for the ring's first key, ErrKeyMismatch for another.
func (db *DB) checkKey(ctx context.Context, keyID string) error {
	var id uuid.UUID
	var stored string
	err := db.pool.QueryRow(ctx, `SELECT id, secret FROM webhooks WHERE secret_key_id = $1
		UNION ALL SELECT id, previous_secret FROM webhooks WHERE previous_secret_key_id = $1 AND previous_secret IS NOT NULL
		LIMIT 1`, keyID).Scan(&id, &stored)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return translate(err, "check key ring", "webhook")
	}
	if _, err := db.open(id, stored, keyID); err != nil {
		mismatch := ErrKeyMismatch
		if keyID == db.keys.Primary() {
			mismatch = ErrPrimaryMismatch
		}
		return fmt.Errorf("%w (key id %q does not open the secret of webhook %s)", mismatch, keyID, id)
	}
	return nil
}

// CheckKeyRing checks the key ring against the stored secrets, for a
// process to run before it seals any: each key of the ring whose id some
// stored secret is sealed under must open one of them (checkKey), or the
// process would seal, or read, under that id with a key nobody else
// holds. It returns, sorted, the ids of the keys of stored secrets that
// the ring lacks (all of them without a ring): those secrets do not open
// here.
func (db *DB) CheckKeyRing(ctx context.Context) (missing []string, err error) {
	used, err := db.SecretsByKey(ctx)
	if err != nil {
		return nil, err
	}
	for id := range used {
		if id != "" && (db.keys == nil || !db.keys.Has(id)) {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	if db.keys == nil {
		return missing, nil
	}
	for _, id := range db.keys.IDs() {
		if used[id] == 0 {
			continue
		}
		if err := db.checkKey(ctx, id); err != nil {
			return missing, err
		}
	}
	return missing, nil
}

// pendingSQL is the condition of a row left to do, with the named
// arguments of sealer.args: its secret or its previous secret needs
// sealing (or resealing), or its previous secret has expired and is
// cleared.
const pendingSQL = `(secret_key_id IS NULL OR (@reseal AND secret_key_id <> @key)
	OR (previous_secret IS NOT NULL AND (previous_secret_until_ms <= @now
		OR previous_secret_key_id IS NULL OR (@reseal AND previous_secret_key_id <> @key))))`

// sealer is one SealSecrets run. now, the store's clock at its start,
// decides which previous secrets have expired.
type sealer struct {
	db   *DB
	opts SealOptions
	rep  *SealReport
	now  int64
}

// args are the named arguments of pendingSQL.
func (s *sealer) args() pgx.NamedArgs {
	return pgx.NamedArgs{"reseal": s.opts.Reseal, "key": s.rep.KeyID, "now": s.now}
}

// pass walks the table once in id order and returns the rows it rewrote.
func (s *sealer) pass(ctx context.Context) (int, error) {
	var after uuid.UUID
	total := 0
	for {
		n, last, err := s.batch(ctx, after)
		if err != nil {
			return total, err
		}
		total += n
		if last == uuid.Nil {
			return total, nil
		}
		after = last
	}
}

// pendingRow is a row a batch rewrites: its secret and its previous
// secret as stored (previous nil when there is none), and what they
// become.
type pendingRow struct {
	id                   uuid.UUID
	stored, previous     *string
	keyID, previousKeyID *string
	untilMs              *int64
	newStored, newPrev   *string
	newKeyID, newPrevKey *string
}

// batch rewrites up to BatchSize rows after id after in one transaction and
// returns how many and the last id seen (uuid.Nil when the pass is over).
func (s *sealer) batch(ctx context.Context, after uuid.UUID) (int, uuid.UUID, error) {
	tx, err := s.db.pool.Begin(ctx)
	if err != nil {
		return 0, uuid.Nil, translate(err, "seal secrets", "webhook")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	args := s.args()
	args["after"], args["limit"] = after, s.opts.BatchSize
	rows, _ := tx.Query(ctx, `SELECT id, secret, secret_key_id, previous_secret, previous_secret_key_id,
		previous_secret_until_ms FROM webhooks
		WHERE id > @after AND `+pendingSQL+` ORDER BY id LIMIT @limit FOR UPDATE SKIP LOCKED`, args)
	todo, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pendingRow, error) {
		var p pendingRow
		return p, r.Scan(&p.id, &p.stored, &p.keyID, &p.previous, &p.previousKeyID, &p.untilMs)
	})
	if err != nil {
		return 0, uuid.Nil, translate(err, "seal secrets", "webhook")
	}
	if len(todo) == 0 {
		return 0, uuid.Nil, nil
	}
	var counts SealReport
	for i := range todo {
		if err := s.rewrite(&todo[i], &counts); err != nil {
			return 0, uuid.Nil, err
		}
	}
	if err := s.write(ctx, tx, todo); err != nil {
		return 0, uuid.Nil, translate(err, "seal secrets", "webhook")
	}
	s.rep.Sealed += counts.Sealed
	s.rep.Resealed += counts.Resealed
	s.rep.Cleared += counts.Cleared
	s.rep.Batches++
	if s.opts.Progress != nil {
		s.opts.Progress(*s.rep)
	}
	last := todo[len(todo)-1].id
	if len(todo) < s.opts.BatchSize {
		last = uuid.Nil
	}
	return len(todo), last, nil
}

// rewrite decides the new stored form of p's secrets and counts it: each
// secret that needs it is sealed with the first key, the others are kept as
// stored, and an expired previous secret is cleared.
func (s *sealer) rewrite(p *pendingRow, counts *SealReport) error {
	var err error
	p.newStored, p.newKeyID, err = s.reseal(p.id, p.stored, p.keyID, counts)
	if err != nil || p.previous == nil {
		return err
	}
	if *p.untilMs <= s.now {
		counts.Cleared++
		return nil
	}
	p.newPrev, p.newPrevKey, err = s.reseal(p.id, p.previous, p.previousKeyID, counts)
	return err
}

// reseal returns the stored form of one secret: sealed with the first key
// when it is unsealed, or sealed with another key and the run reseals;
// otherwise as it was.
func (s *sealer) reseal(id uuid.UUID, stored, keyID *string, counts *SealReport) (*string, *string, error) {
	if keyID != nil && (!s.opts.Reseal || *keyID == s.rep.KeyID) {
		return stored, keyID, nil
	}
	plain, err := s.db.openSecret(id, *stored, keyID)
	if err != nil {
		return nil, nil, err
	}
	if keyID == nil {
		counts.Sealed++
	} else {
		counts.Resealed++
	}
	sealed, newKey := s.db.sealSecret(id, plain)
	return &sealed, newKey, nil
}

// write stores the batch's new secrets and commits.
func (s *sealer) write(ctx context.Context, tx pgx.Tx, todo []pendingRow) error {
	ids := make([]uuid.UUID, len(todo))
	secrets, keys, prevs, prevKeys := make([]*string, len(todo)), make([]*string, len(todo)), make([]*string, len(todo)), make([]*string, len(todo))
	for i, p := range todo {
		ids[i], secrets[i], keys[i], prevs[i], prevKeys[i] = p.id, p.newStored, p.newKeyID, p.newPrev, p.newPrevKey
	}
	_, err := tx.Exec(ctx, `UPDATE webhooks w SET secret = v.secret, secret_key_id = v.key_id,
		previous_secret = v.prev, previous_secret_key_id = v.prev_key_id,
		previous_secret_until_ms = CASE WHEN v.prev IS NULL THEN NULL ELSE w.previous_secret_until_ms END
		FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[]) AS v(id, secret, key_id, prev, prev_key_id)
		WHERE w.id = v.id`, ids, secrets, keys, prevs, prevKeys)
	if err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// left counts the rows still to do, held ones included.
func (s *sealer) left(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.pool.QueryRow(ctx, "SELECT count(*) FROM webhooks WHERE "+pendingSQL, s.args()).Scan(&n)
	return n, translate(err, "seal secrets", "webhook")
}
