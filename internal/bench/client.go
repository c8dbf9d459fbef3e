package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
)

// Device is a device created for a run, with its API key.
type Device struct {
	ID  string `json:"id"`
	Key string `json:"api_key"`
}

// Webhook is a webhook created for a run, with its signing secret.
type Webhook struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// Client calls Furrow's management API as one user.
type Client struct {
	URL   string
	Token string
	HTTP  *http.Client
	// User is the user the client acts as.
	User furrow.User
}

// NewUser creates a user directly in the database at databaseURL, as
// `furrow admin create-user` does, within DBTimeout, and returns a Client
// acting as that user against the API at baseURL.
func NewUser(ctx context.Context, databaseURL, baseURL string) (*Client, error) {
	ctx, cancel := context.WithTimeout(ctx, DBTimeout)
	defer cancel()
	db, err := store.Open(ctx, databaseURL, store.Options{MaxConns: 2, Writers: 1})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	email := fmt.Sprintf("bench-%d@furrow.invalid", time.Now().UnixNano())
	u, token, err := db.CreateUser(ctx, email)
	if err != nil {
		return nil, fmt.Errorf("create bench user: %w", err)
	}
	return &Client{URL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}, User: u}, nil
}

// CreateFarm creates a farm owned by the user and returns its id.
func (c *Client) CreateFarm(ctx context.Context, name string) (string, error) {
	var farm struct {
		ID string `json:"id"`
	}
	err := c.do(ctx, "/api/farms", map[string]string{"name": name}, &farm)
	return farm.ID, err
}

// CreateDevices creates n devices on farmID, a few at a time, each with its
// own key. On an error it returns those created so far, the others zero.
func (c *Client) CreateDevices(ctx context.Context, farmID string, n int) ([]Device, error) {
	devices := make([]Device, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range devices {
		g.Go(func() error {
			body := map[string]string{"name": fmt.Sprintf("bench-%04d", i)}
			return c.do(gctx, "/api/farms/"+farmID+"/devices", body, &devices[i])
		})
	}
	return devices, g.Wait()
}

// CreateWebhook subscribes endpoint to the farm's events.
func (c *Client) CreateWebhook(ctx context.Context, farmID, endpoint string) (Webhook, error) {
	var w Webhook
	err := c.do(ctx, "/api/farms/"+farmID+"/webhooks", map[string]string{"url": endpoint}, &w)
	return w, err
}

// DeleteWebhook deletes the farm's webhook id.
func (c *Client) DeleteWebhook(ctx context.Context, farmID, id string) error {
	return c.send(ctx, http.MethodDelete, "/api/farms/"+farmID+"/webhooks/"+id, nil, http.StatusNoContent, nil)
}

// do POSTs body to path and decodes a 201 answer into out.
func (c *Client) do(ctx context.Context, path string, body, out any) error {
	return c.send(ctx, http.MethodPost, path, body, http.StatusCreated, out)
}

// send makes a request of method to path with body as JSON (none when
// nil) and decodes a want answer into out (when not nil). Any other
// answer is an error quoting the API's error code and reason, never the
// token.
func (c *Client) send(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		var e struct{ Error, Reason string }
		_ = json.Unmarshal(raw, &e)
		return fmt.Errorf("%s %s: status %d %s: %s", method, path, resp.StatusCode, e.Error, e.Reason)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}
