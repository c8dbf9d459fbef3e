package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

// LeftBehind is what a run against a running server (--url) created there
// and leaves: the API has no route to delete a user, revoke its token, or
// delete a farm or a device, so the run's user keeps a valid token and its
// farm's devices keep valid keys. A delivery run's webhook is deleted at
// the end; Webhook names it when that failed, and it then stays enabled,
// pointing at the run's receiver, which is closed. A run that starts its
// own server leaves nothing: its scratch database is dropped.
type LeftBehind struct {
	User    string `json:"user"` // email
	UserID  string `json:"user_id"`
	Farm    string `json:"farm"`
	Devices int    `json:"devices"`
	// Webhook and WebhookError name a webhook that could not be deleted,
	// and why.
	Webhook      string `json:"webhook,omitempty"`
	WebhookError string `json:"webhook_error,omitempty"`
}

// leave deletes hook, when given, and returns and logs what the run
// leaves on the server.
func (f *fleet) leave(ctx context.Context, hook *Webhook, log *slog.Logger) *LeftBehind {
	lb := &LeftBehind{User: f.client.User.Email, UserID: f.client.User.ID.String(), Farm: f.farm, Devices: f.created()}
	if hook != nil {
		if err := f.client.DeleteWebhook(ctx, f.farm, hook.ID); err != nil {
			lb.Webhook, lb.WebhookError = hook.ID, err.Error()
		}
	}
	log.Warn("left on the server under test, which has no API to delete them: the run's user with a valid token, its farm and its devices with valid keys",
		"user", lb.User, "user_id", lb.UserID, "farm", lb.Farm, "devices", lb.Devices)
	if lb.Webhook != "" {
		log.Warn("the run's webhook could not be deleted and stays enabled, pointing at the closed receiver", "webhook", lb.Webhook, "err", lb.WebhookError)
	}
	return lb
}

// created returns how many of the fleet's devices were created.
func (f *fleet) created() int {
	n := 0
	for _, d := range f.devices {
		if d.ID != "" {
			n++
		}
	}
	return n
}

// print writes l for people; nothing when l is nil.
func (l *LeftBehind) print(w io.Writer) {
	if l == nil {
		return
	}
	fmt.Fprintf(w, "  left on the server under test (the API deletes none of these): user %s (%s) with a valid token; farm %s with %d devices whose keys stay valid\n",
		l.User, l.UserID, l.Farm, l.Devices)
	if l.Webhook != "" {
		fmt.Fprintf(w, "  the run's webhook %s could not be deleted (%s): it stays enabled, pointing at the closed receiver\n", l.Webhook, l.WebhookError)
	}
}
