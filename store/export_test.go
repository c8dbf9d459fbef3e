package store

import (
	"context"

	"github.com/furrowhq/furrow"
)

// CommitTogether stores rs through one group-commit batch, as if they had
// been queued at once, and returns each one's outcome.
func CommitTogether(db *DB, rs []furrow.Reading) []error {
	batch := make([]*ingestReq, len(rs))
	for i, r := range rs {
		r.Timestamp = db.nowMs()
		batch[i] = newIngestReq(context.Background(), r)
	}
	db.ingest.commit(batch)
	errs := make([]error, len(rs))
	for i, q := range batch {
		errs[i] = <-q.done
	}
	return errs
}
