package apitest

import (
	"net/http/httptest"
	"strings"
	"testing"
)

const spec = `{"openapi":"3.1.0","info":{"title":"t","version":"1"},
"paths":{"/things":{"post":{
  "requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}}}},
  "responses":{"201":{"description":"ok","content":{"application/json":{"schema":{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}}}}},
    "400":{"description":"bad","content":{"application/json":{"schema":{"type":"object","required":["error"]}}}}}}}},
"webhooks":{"thing.made":{"post":{"parameters":[{"name":"webhook-id","in":"header","required":true,"schema":{"type":"string"}}],
  "requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object","required":["id"]}}}},
  "responses":{"200":{"description":"ok"}}}}}}`

func exchange(t *testing.T, c *Contract, reqBody string, status int, respBody string) error {
	t.Helper()
	r := httptest.NewRequest("POST", "/things", strings.NewReader(reqBody))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.WriteString(respBody)
	return c.Check(r, []byte(reqBody), w.Result(), []byte(respBody))
}

func TestCheck(t *testing.T) {
	c, err := Load([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := exchange(t, c, `{"n":1}`, 201, `{"id":"a"}`); err != nil {
		t.Fatalf("documented exchange: %v", err)
	}
	if err := exchange(t, c, `{"n":"x"}`, 400, `{"error":"bad_request"}`); err != nil {
		t.Fatalf("rejected request answered 400: %v", err)
	}
	for name, e := range map[string]error{
		"answer drifts":        exchange(t, c, `{"n":1}`, 201, `{"id":1}`),
		"undocumented status":  exchange(t, c, `{"n":1}`, 202, `{"id":"a"}`),
		"bad request accepted": exchange(t, c, `{"n":"x"}`, 201, `{"id":"a"}`),
	} {
		if e == nil {
			t.Errorf("%s: no error", name)
		}
	}
	r := httptest.NewRequest("GET", "/nowhere", nil)
	w := httptest.NewRecorder()
	w.WriteHeader(200)
	if err := c.Check(r, nil, w.Result(), nil); err == nil {
		t.Error("an undocumented route answered 200 passed")
	}
}

func TestCheckDelivery(t *testing.T) {
	c, err := Load([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/hook", strings.NewReader(`{"id":"e"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("webhook-id", "e")
	if err := c.CheckDelivery("thing.made", r, []byte(`{"id":"e"}`)); err != nil {
		t.Fatalf("documented delivery: %v", err)
	}
	r.Header.Del("webhook-id")
	if err := c.CheckDelivery("thing.made", r, []byte(`{"id":"e"}`)); err == nil {
		t.Error("a delivery without its required header passed")
	}
	if err := c.CheckDelivery("other", r, nil); err == nil {
		t.Error("an undocumented webhook passed")
	}
	if _, err := Load([]byte(`{"openapi":"3.1.0"}`)); err == nil {
		t.Error("an invalid document loaded")
	}
}
