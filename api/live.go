package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/live"
)

// LiveServer serves the live WebSocket connection of a client the API has
// authenticated and authorized (live.Server).
type LiveServer interface {
	Accept(w http.ResponseWriter, r *http.Request, c live.Client) error
}

var errLiveCredentialMissing = furrow.Errorf(furrow.EUNAUTHORIZED,
	"The credential is missing: send Authorization: Bearer <user token>, or offer the subprotocol %s<user token>.", live.BearerProtocolPrefix)

// liveToken is the user token of a live request: the Authorization header,
// else, for browsers that cannot set headers on a WebSocket, the offered
// subprotocol furrow.bearer.<token>. The header wins when both are sent.
func liveToken(r *http.Request) (string, error) {
	if r.Header.Get("Authorization") != "" {
		return bearer(r)
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if tok, ok := strings.CutPrefix(strings.TrimSpace(p), live.BearerProtocolPrefix); ok && tok != "" {
				return tok, nil
			}
		}
	}
	return "", errLiveCredentialMissing
}

// liveConnect serves GET /api/live?topic=T after authUser: it parses the
// topics and hands the request to the live server, which checks the
// handshake, the user's open connections and each topic's farm before the
// upgrade. Errors before the upgrade are answered like every other
// route's; a user at the connection limit gets retry-after too.
func (s *server) liveConnect(w http.ResponseWriter, r *http.Request) error {
	topics, err := live.ParseTopics(r.URL.Query()["topic"])
	if err != nil {
		return err
	}
	user := currentUser(r).ID
	err = s.Live.Accept(w, r, live.Client{User: user, Topics: topics,
		Authorize: func(ctx context.Context, t live.Topic) error { return s.mayWatch(ctx, user, t) }})
	if furrow.ErrorCode(err) == furrow.ERATELIMITED {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(live.ConnLimitRetryAfter)))
	}
	return err
}

// mayWatch admits viewers and above of the topic's farm; anyone else gets
// EFORBIDDEN, the same for a farm that does not exist, so that existence
// does not leak.
func (s *server) mayWatch(ctx context.Context, user uuid.UUID, t live.Topic) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	role, err := s.memberRole(ctx, t.Farm, user)
	if err != nil {
		return err
	}
	if role < furrow.RoleViewer {
		return furrow.Errorf(furrow.EFORBIDDEN, "You are not a member of the farm of topic %s.", t)
	}
	return nil
}
