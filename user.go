package furrow

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
)

// User is a person of the app. Users authenticate to the management API with
// a bearer token; only its hash is stored.
type User struct {
	ID    uuid.UUID `json:"id"`
	Email string    `json:"email"`
}

// MaxEmailLength is the longest email address accepted, in bytes: the
// longest an SMTP path can carry (RFC 5321).
const MaxEmailLength = 254

// CheckEmail returns EINVALID unless email could be an address: 3 to
// MaxEmailLength bytes of UTF-8 without spaces or control characters, with
// exactly one '@' between a local part and a domain, neither empty. It is
// not RFC 5322: it stops what is plainly no address (a blank, a pasted
// line, a name), which would otherwise be stored as a user's identity.
func CheckEmail(email string) error {
	invalid := Errorf(EINVALID, "The email must be an address such as ada@example.com: 3 to %d bytes, no spaces or control characters, one @ between a name and a domain.", MaxEmailLength)
	if len(email) < 3 || len(email) > MaxEmailLength || !utf8.ValidString(email) {
		return invalid
	}
	if strings.IndexFunc(email, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return invalid
	}
	local, domain, _ := strings.Cut(email, "@")
	if local == "" || domain == "" || strings.Contains(domain, "@") {
		return invalid
	}
	return nil
}

// UserTokenPrefix starts every user token.
const UserTokenPrefix = "fut_"

// Farm groups devices, webhooks and members.
type Farm struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
}

// Role is a member's role on a farm. Roles are ordered: a higher role can do
// everything a lower one can.
type Role int

// Roles, lowest first.
const (
	RoleViewer Role = iota + 1
	RoleOperator
	RoleManager
	RoleOwner
)

var roleNames = map[Role]string{RoleViewer: "viewer", RoleOperator: "operator", RoleManager: "manager", RoleOwner: "owner"}

// String returns the role's name, or "" for an invalid role.
func (r Role) String() string { return roleNames[r] }

// ParseRole returns the role named s, or an EINVALID error.
func ParseRole(s string) (Role, error) {
	for r, n := range roleNames {
		if n == s {
			return r, nil
		}
	}
	return 0, Errorf(EINVALID, "The role must be one of viewer, operator, manager, owner.")
}

// MarshalJSON writes the role's name.
func (r Role) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON reads a role's name.
func (r *Role) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return Errorf(EINVALID, "The role must be a string.")
	}
	v, err := ParseRole(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Member is a user's role on a farm.
type Member struct {
	FarmID uuid.UUID `json:"-"`
	UserID uuid.UUID `json:"user_id"`
	Role   Role      `json:"role"`
}
