package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// list names a paged list; its name prefixes the list's cursors, so that a
// cursor of one list is refused by another and a cursor's shape can change
// without misreading old ones.
type list string

// The paged lists.
const (
	readingsList list = "r1"
	eventsList   list = "e1"
	attemptsList list = "a1"
	devicesList  list = "d1"
)

// nextCursorHeader carries the cursor of a list's next page.
const nextCursorHeader = "Furrow-Next-Cursor"

// encodeDeviceCursor makes a cursor of the devices list opaque to clients.
func encodeDeviceCursor(p furrow.DevicePlace) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s:%s:%s", devicesList, p.ID, p.Name))
}

// queryDeviceCursor parses the devices list's optional ?cursor=; anything
// but a cursor that list made is EINVALID.
func queryDeviceCursor(r *http.Request) (*furrow.DevicePlace, error) {
	s := r.URL.Query().Get("cursor")
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	id, name, _ := strings.Cut(strings.TrimPrefix(string(b), string(devicesList)+":"), ":")
	p := furrow.DevicePlace{Name: name}
	if err == nil {
		p.ID, err = uuid.Parse(id)
	}
	if err == nil {
		_, err = checkName(name)
	}
	if err != nil || encodeDeviceCursor(p) != s {
		return nil, errBadCursor
	}
	return &p, nil
}

// errBadCursor answers a cursor that its list did not make.
var errBadCursor = furrow.Errorf(furrow.EINVALID, "The query parameter cursor is malformed; pass back the %s header as is.", nextCursorHeader)

// encodeCursor makes a cursor of l opaque to clients.
func encodeCursor(l list, c furrow.Cursor) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s:%d:%d", l, c.TimestampMs, c.Seq))
}

// decodeCursor reverses encodeCursor for l; anything else is EINVALID.
func decodeCursor(l list, s string) (furrow.Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return furrow.Cursor{}, errBadCursor
	}
	var c furrow.Cursor
	var rest string
	n, _ := fmt.Sscanf(string(b), string(l)+":%d:%d%s", &c.TimestampMs, &c.Seq, &rest)
	if n != 2 || encodeCursor(l, c) != s {
		return furrow.Cursor{}, errBadCursor
	}
	return c, nil
}

// queryCursor parses the optional ?cursor= of l.
func queryCursor(r *http.Request, l list) (*furrow.Cursor, error) {
	s := r.URL.Query().Get("cursor")
	if s == "" {
		return nil, nil
	}
	c, err := decodeCursor(l, s)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// setNextCursor names the next page of l, when there is one.
func setNextCursor(w http.ResponseWriter, l list, next *furrow.Cursor) {
	if next != nil {
		w.Header().Set(nextCursorHeader, encodeCursor(l, *next))
	}
}
