package furrow

import "github.com/google/uuid"

// ParseUUID accepts only the 36-character hyphenated form of a uuid, its
// hex digits in either case: uuid.Parse alone would also take braces, a
// urn:uuid: prefix and bare hex, and an id should have one spelling (up to
// case) that a document can state as one pattern. Malformed is EINVALID.
func ParseUUID(s string) (uuid.UUID, error) {
	if len(s) != 36 {
		return uuid.Nil, errUUID
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, errUUID
	}
	return u, nil
}

// UUIDForm is the one spelling of a uuid ParseUUID takes, as errors show it.
const UUIDForm = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"

var errUUID = Errorf(EINVALID, "The id must be a UUID in the form %s.", UUIDForm)
