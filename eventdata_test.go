package furrow_test

import (
	"fmt"
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
		// PostgreSQL's numeric limits, reached.
		`{"a":0.` + strings.Repeat("0", furrow.MaxNumericFractionDigits-1) + `1}`,
		`{"a":-1` + strings.Repeat("0", furrow.MaxNumericWholeDigits-1) + `}`,
		`{"a":0e-16383,"pad":"` + strings.Repeat("x", 17000) + `"}`,
		`{"a":0.05e131073,"pad":"` + strings.Repeat("x", 140000) + `"}`, // 5 and 131,071 zeros
		`{"a":0e999999}`, // zero is 0, whatever its exponent
	}
	for _, data := range ok {
		if err := furrow.CheckEventData([]byte(data)); err != nil {
			t.Errorf("CheckEventData(%s) = %v, want nil", short(data), err)
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
	// Past PostgreSQL's numeric limits, with little growth.
	const limits = "PostgreSQL cannot store"
	pad := `,"pad":"` + strings.Repeat("x", 140000) + `"}`
	for _, data := range []string{
		`{"a":0.` + strings.Repeat("0", furrow.MaxNumericFractionDigits) + `1}`,
		`{"a":0.` + strings.Repeat("0", furrow.MaxNumericFractionDigits+1) + `}`, // trailing zeros count
		`{"a":1` + strings.Repeat("0", furrow.MaxNumericWholeDigits) + `}`,
		`{"a":1e-16384` + pad,
		`{"a":10e-16384` + pad,
		`{"a":1.5e-16383` + pad,
		`{"a":0e-16384` + pad,
		`{"a":1e131072` + pad,
		`{"a":0.05e131074` + pad,
	} {
		bad[data] = limits
	}
	for data, want := range bad {
		err := furrow.CheckEventData([]byte(data))
		if furrow.ErrorCode(err) != furrow.EINVALID || !strings.Contains(furrow.ErrorMessage(err), want) {
			t.Errorf("CheckEventData(%s) = %v, want EINVALID saying %q", short(data), err, want)
		}
	}
}

// short is data, cut short when long enough to flood the test's output.
func short(data string) string {
	if len(data) <= 80 {
		return data
	}
	return fmt.Sprintf("%s…(%d bytes)", data[:80], len(data))
}

func TestNewAppEventChecksItsData(t *testing.T) {
	_, err := furrow.NewAppEvent(furrow.EventTriggerFired, [16]byte{1}, []byte(`{"a": "\udfff"}`))
	if furrow.ErrorCode(err) != furrow.EINVALID {
		t.Fatalf("NewAppEvent with a lone surrogate: %v, want EINVALID", err)
	}
}
