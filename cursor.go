package furrow

// The page sizes of the lists (a farm's readings and events, a webhook's
// delivery log): a page holds DefaultListLimit rows unless asked for 1 to
// MaxListLimit.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ListLimit is the page size of a request for limit rows: DefaultListLimit
// for 0 or less, at most MaxListLimit.
func ListLimit(limit int) int {
	if limit <= 0 {
		return DefaultListLimit
	}
	return min(limit, MaxListLimit)
}

// Cursor marks a position in one of the lists that run newest first, by
// time and then by the order stored (a farm's readings and events, a
// webhook's delivery log): a page that starts Before it continues the list
// where the previous page ended, however many rows arrive meanwhile.
type Cursor struct {
	// TimestampMs is the time of the last row of the previous page: a
	// reading's Timestamp, an event's OccurredAtMs, an attempt's AtMs.
	TimestampMs int64
	// Seq is that row's place in the order stored.
	Seq int64
}
