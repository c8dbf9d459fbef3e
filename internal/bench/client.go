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
}

// NewUser creates a user directly in the database at databaseURL, as
// `furrow admin create-user` does, and returns a Client acting as that user
// against the API at baseURL.
func NewUser(ctx context.Context, databaseURL, baseURL string) (*Client, error) {
	db, err := store.Open(ctx, databaseURL, store.Options{MaxConns: 2, Writers: 1})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	email := fmt.Sprintf("bench-%d@furrow.invalid", time.Now().UnixNano())
	_, token, err := db.CreateUser(ctx, email)
	if err != nil {
		return nil, fmt.Errorf("create bench user: %w", err)
	}
	return &Client{URL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}, nil
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
// own key.
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
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return devices, nil
}

// CreateWebhook subscribes endpoint to the farm's events.
func (c *Client) CreateWebhook(ctx context.Context, farmID, endpoint string) (Webhook, error) {
	var w Webhook
	err := c.do(ctx, "/api/farms/"+farmID+"/webhooks", map[string]string{"url": endpoint}, &w)
	return w, err
}

// do POSTs body to path and decodes a 201 answer into out. Any other answer
// is an error quoting the API's error code and reason, never the token.
func (c *Client) do(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		var e struct{ Error, Reason string }
		_ = json.Unmarshal(raw, &e)
		return fmt.Errorf("POST %s: status %d %s: %s", path, resp.StatusCode, e.Error, e.Reason)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("POST %s: decode answer: %w", path, err)
	}
	return nil
}
