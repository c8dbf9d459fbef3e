package live

import (
	"testing"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

const (
	farmText   = "6f1c2b7e-3d4a-4b5c-8d9e-0a1b2c3d4e5f"
	deviceText = "0d9e8f7a-6b5c-4d3e-9f1a-2b3c4d5e6f70"
)

func TestParseTopicValid(t *testing.T) {
	farm, device := uuid.MustParse(farmText), uuid.MustParse(deviceText)
	for in, want := range map[string]Topic{
		"farms/" + farmText + "/readings":                                      FarmTopic(farm),
		"farms/" + farmText + "/events":                                        EventsTopic(farm),
		"farms/" + farmText + "/devices/" + deviceText + "/metrics/220":        MetricTopic(farm, device, 220),
		"farms/" + farmText + "/devices/" + deviceText + "/metrics/1":          MetricTopic(farm, device, 1),
		"farms/" + farmText + "/devices/" + deviceText + "/metrics/2147483647": MetricTopic(farm, device, 2147483647),
	} {
		got, err := ParseTopic(in)
		if err != nil || got != want {
			t.Errorf("ParseTopic(%q) = %v, %v; want %v", in, got, err, want)
		}
		if got.String() != in {
			t.Errorf("String() = %q, want %q", got.String(), in)
		}
	}
}

func TestParseTopicInvalid(t *testing.T) {
	dev := "farms/" + farmText + "/devices/" + deviceText + "/metrics/"
	for _, in := range []string{
		"", "farms", "farms/" + farmText, "farms/" + farmText + "/readings/",
		"/farms/" + farmText + "/readings", "farms/" + farmText + "/readings/extra",
		"farms/6F1C2B7E-3D4A-4B5C-8D9E-0A1B2C3D4E5F/readings",
		"farms/{" + farmText + "}/readings", "farms/urn:uuid:" + farmText + "/readings",
		"farms/6f1c2b7e3d4a4b5c8d9e0a1b2c3d4e5f/readings",
		"farms/00000000-0000-0000-0000-000000000000/readings",
		"farms/*/readings", "farms/+/readings", "farms/" + farmText + "/#",
		"farms/" + farmText + "/devices/" + deviceText + "/metrics",
		"farms/" + farmText + "/devices/00000000-0000-0000-0000-000000000000/metrics/1",
		dev + "0", dev + "-1", dev + "+1", dev + "01", dev + "2147483648", dev + "1.5",
		dev + " 1", dev + "220/", dev + "abc", dev + "*",
		"FARMS/" + farmText + "/readings",
		"farms/" + farmText + "/events/", "farms/" + farmText + "/Events", "farms/" + farmText + "/devices/" + deviceText + "/events",
	} {
		_, err := ParseTopic(in)
		if furrow.ErrorCode(err) != furrow.EINVALID {
			t.Errorf("ParseTopic(%q) error = %v, want %s", in, err, furrow.EINVALID)
		}
	}
}

// FuzzParseTopic checks that ParseTopic never panics and that what it
// accepts has one spelling: the topic's String is the input.
func FuzzParseTopic(f *testing.F) {
	f.Add("farms/" + farmText + "/readings")
	f.Add("farms/" + farmText + "/devices/" + deviceText + "/metrics/220")
	f.Add("farms/" + farmText + "/devices/" + deviceText + "/metrics/0220")
	f.Add("farms//readings")
	f.Add("farms/" + farmText + "/devices/" + deviceText + "/metrics/99999999999")
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := ParseTopic(s)
		if err != nil {
			if furrow.ErrorCode(err) != furrow.EINVALID {
				t.Fatalf("ParseTopic(%q) error code %q", s, furrow.ErrorCode(err))
			}
			return
		}
		if tp.String() != s {
			t.Fatalf("ParseTopic(%q).String() = %q", s, tp.String())
		}
		if tp.Farm == uuid.Nil || (tp.Device != uuid.Nil && tp.Metric < 1) {
			t.Fatalf("ParseTopic(%q) = %+v", s, tp)
		}
	})
}
