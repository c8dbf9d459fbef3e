package furrow

import (
	"strings"
	"testing"
)

// CheckEmail takes what could be an address and refuses blanks, names,
// pasted lines and stray characters with EINVALID.
func TestCheckEmail(t *testing.T) {
	ok := []string{
		"a@b", "ada@example.com", "ops+furrow@farm.example", "josé@exämple.org",
		strings.Repeat("a", 64) + "@" + strings.Repeat("d", MaxEmailLength-65),
	}
	bad := []string{
		"", "   ", "a@", "@b", "ab", "not an email", "ada@example.com ", " ada@example.com",
		"ada@@example.com", "ada@exa@mple.com", "ada", "ada\n@example.com", "ada@example.com\r\n",
		"ada\x00@example.com", "ada\x7f@example.com", "ada\u0085@example.com", "ada\u00a0@example.com",
		"ada\u2028@example.com", "ada@example.com\t", "ad\xffa@example.com",
		strings.Repeat("a", 64) + "@" + strings.Repeat("d", MaxEmailLength-64),
	}
	for _, e := range ok {
		if err := CheckEmail(e); err != nil {
			t.Errorf("CheckEmail(%q) = %v, want nil", e, err)
		}
	}
	for _, e := range bad {
		if err := CheckEmail(e); ErrorCode(err) != EINVALID || !strings.Contains(ErrorMessage(err), "address") {
			t.Errorf("CheckEmail(%q) = %v, want EINVALID saying what an address is", e, err)
		}
	}
}
