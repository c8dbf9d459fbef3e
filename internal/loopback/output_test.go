package loopback

import "testing"

func TestOutputKeepsTheEnd(t *testing.T) {
	o := &output{max: 5}
	_, _ = o.Write([]byte("abc"))
	_, _ = o.Write([]byte("defg"))
	if got := o.String(); got != "cdefg" {
		t.Errorf("bounded output = %q", got)
	}
	all := &output{}
	_, _ = all.Write([]byte("abc"))
	_, _ = all.Write([]byte("defg"))
	if got := all.String(); got != "abcdefg" {
		t.Errorf("unbounded output = %q", got)
	}
}
