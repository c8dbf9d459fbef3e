package api

import (
	"encoding/base64"
	"fmt"

	"github.com/furrowhq/furrow"
)

// cursorVersion prefixes encoded cursors so that their shape can change
// without misreading old ones.
const cursorVersion = "r1"

// encodeCursor makes a reading cursor opaque to clients.
func encodeCursor(c furrow.ReadingCursor) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s:%d:%d", cursorVersion, c.TimestampMs, c.Seq))
}

// decodeCursor reverses encodeCursor; anything else is EINVALID.
func decodeCursor(s string) (furrow.ReadingCursor, error) {
	bad := furrow.Errorf(furrow.EINVALID, "The query parameter cursor is malformed; pass back the Furrow-Next-Cursor header as is.")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return furrow.ReadingCursor{}, bad
	}
	var c furrow.ReadingCursor
	var rest string
	n, _ := fmt.Sscanf(string(b), cursorVersion+":%d:%d%s", &c.TimestampMs, &c.Seq, &rest)
	if n != 2 || encodeCursor(c) != s {
		return furrow.ReadingCursor{}, bad
	}
	return c, nil
}
