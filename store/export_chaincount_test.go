package store

// CountedAttemptSQL is AddDeliveredAttempt's statement for a 2xx row, for
// tests that hold its transaction open; its arguments are insertAttempt's.
const CountedAttemptSQL = countedAttemptSQL

// DeliveredAfterSQL is DeliveredAfter's statement ($1 webhook, $2 ms), for
// plan tests.
const DeliveredAfterSQL = deliveredAfterSQL
