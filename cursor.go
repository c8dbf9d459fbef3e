package furrow

// The page sizes of the lists (a farm's readings and events, a webhook's
// delivery log): a page holds DefaultListLimit rows unless asked for 1 to
// MaxListLimit, and ends early once its rows' large fields reach
// MaxPageBytes (see PageFull).
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
	// MaxPageBytes bounds what a page's rows hold, and with it the memory
	// a list request takes in the server: a thousand events of 64 KB each
	// would take 64 MB, and several times that while encoded.
	MaxPageBytes = 4 << 20
)

// Sized is a row of the lists that tells its size: the bytes of its
// fields of any length (an event's data, a reading's value, an attempt's
// response body and error), which PageFull counts.
type Sized interface {
	Size() int
}

// PageFull says whether a page of n rows whose sizes add up to size takes
// no further row: it holds limit rows, or its rows reached MaxPageBytes.
// The first row always fits, so that every page moves the list on.
func PageFull(n, limit, size int) bool {
	return n >= limit || size >= MaxPageBytes
}

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
