package furrow_test

import (
	"strings"
	"testing"

	"github.com/furrowhq/furrow"
)

func TestCheckEventData(t *testing.T) {
	ok := []string{
		`{}`,
		`{"a":1,"b":-2.5,"c":1.5e3,"d":1E-3,"e":0.001,"f":[true,false,null]}`,
		`{"smile":"\ud83d\ude00","esc":"\"\\\/\b\f\n\r\t","é":"\u00e9"}`,
		`{"path":"C:\\u0000"}`,                         // an escaped backslash, then text
		`{"n":12345678901234567890123456789012345678}`, // long, but as long as written
		`{"pad":"` + strings.Repeat("x", 500) + `","big":1e400}`,
	}
	for _, data := range ok {
		if err := furrow.CheckEventData([]byte(data)); err != nil {
			t.Errorf("CheckEventData(%s) = %v, want nil", data, err)
		}
	}
	bad := map[string]string{
		`{"a":"\u0000"}`:             "NUL",
		`{"a":"x\u0000"}`:            "NUL",
		`{"a":"\ud800"}`:             "surrogate (\\ud800)",
		`{"a":"\udc00"}`:             "surrogate (\\udc00)",
		`{"a":"\ud800\u0041"}`:       "surrogate (\\ud800)",
		`{"a":"\ud800\ud800"}`:       "surrogate (\\ud800)",
		`{"a":"\\\ud800"}`:           "surrogate (\\ud800)",
		`{"a":1e400}`:                "written out in full",
		`{"a":1e-400}`:               "written out in full",
		`{"a":1e999999999999999999}`: "written out in full",
		`{"a":[1e131071,1e131071]}`:  "written out in full",
		`{"a":"\u12`:                 "JSON object",
	}
	for data, want := range bad {
		err := furrow.CheckEventData([]byte(data))
		if furrow.ErrorCode(err) != furrow.EINVALID || !strings.Contains(furrow.ErrorMessage(err), want) {
			t.Errorf("CheckEventData(%s) = %v, want EINVALID saying %q", data, err, want)
		}
	}
}

func TestNewAppEventChecksItsData(t *testing.T) {
	_, err := furrow.NewAppEvent(furrow.EventTriggerFired, [16]byte{1}, []byte(`{"a": "\udfff"}`))
	if furrow.ErrorCode(err) != furrow.EINVALID {
		t.Fatalf("NewAppEvent with a lone surrogate: %v, want EINVALID", err)
	}
}
