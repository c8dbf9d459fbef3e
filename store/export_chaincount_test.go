package store

// CountedAttemptSQL is AddDeliveredAttempt's statement for a 2xx row, for
// tests that hold its transaction open; its arguments are insertAttempt's.
const CountedAttemptSQL = countedAttemptSQL

// DeliveredAfterSQL is the state write's guard ($1 webhook, $2 ms), and
// DeliveredBetweenSQL DeliveredBetween's statement ($1 webhook, $2 and $3
// the bounds), for plan tests.
var (
	DeliveredAfterSQL   = deliveredAfterSQL
	DeliveredBetweenSQL = deliveredBetweenSQL
)
