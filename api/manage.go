package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/furrowhq/furrow"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
)

// farmRoutes is the management API under /api/farms. Checks run in this
// order: user credential (401), ids in the path (400), membership (404, so
// that a farm's existence does not leak), role (403), then the body.
func (s *server) farmRoutes(r chi.Router) {
	r.Use(noStore, s.authUser(bearer))
	r.Post("/", s.handle(s.createFarm))
	r.Route("/{farm}", func(r chi.Router) {
		r.Use(s.farmMember, s.wellFormedQuery)
		viewer, manager := s.need(furrow.RoleViewer), s.need(furrow.RoleManager)
		r.With(manager).Post("/members", s.handle(s.addMember))
		r.With(manager).Post("/devices", s.handle(s.createDevice))
		r.With(manager).Post("/devices/{device}/keys", s.handle(s.rotateKey))
		r.With(viewer).Get("/devices", s.handle(s.listDevices))
		r.With(manager).Post("/webhooks", s.handle(s.createWebhook))
		r.With(manager).Get("/webhooks", s.handle(s.listWebhooks))
		r.With(manager).Get("/webhooks/{webhook}", s.handle(s.getWebhook))
		r.With(manager).Delete("/webhooks/{webhook}", s.handle(s.deleteWebhook))
		r.With(manager).Post("/webhooks/{webhook}/enable", s.handle(s.enableWebhook))
		r.With(manager).Post("/webhooks/{webhook}/secret/rotate", s.handle(s.rotateSecret))
		r.With(manager).Get("/webhooks/{webhook}/attempts", s.handle(s.listAttempts))
		r.With(manager).Post("/webhooks/{webhook}/redeliver", s.handle(s.redeliver))
		r.With(manager).Post("/webhooks/{webhook}/test", s.handle(s.testWebhook))
		r.With(manager).Patch("/webhooks/{webhook}", s.handle(s.updateWebhook))
		r.With(manager).Post("/events", s.handle(s.createEvent))
		r.With(viewer).Get("/events", s.handle(s.listEvents))
		r.With(viewer).Get("/readings", s.handle(s.listReadings))
	})
}

// noStore keeps answers that may carry secrets out of caches.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// authUser authenticates the user by the token that tokenOf finds in the
// request (bearer, or liveToken): missing or invalid is 401.
func (s *server) authUser(tokenOf func(*http.Request) (string, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return s.middleware(func(r *http.Request) (context.Context, error) {
			token, err := tokenOf(r)
			if err != nil {
				return nil, userTokenError(err)
			}
			u, err := s.Users.UserByToken(r.Context(), token)
			if err != nil {
				return nil, userTokenError(unauthorizedOr(err))
			}
			return context.WithValue(r.Context(), userKey, u), nil
		}, next)
	}
}

// The refusals of a user token: the device credential's, said of a token.
var (
	errUserTokenMissing = furrow.Errorf(furrow.EUNAUTHORIZED, "The credential is missing: send Authorization: Bearer <user token>.")
	errUserTokenInvalid = furrow.Errorf(furrow.EUNAUTHORIZED, "The credential is invalid: no user has this token.")
)

// userTokenError says err, a refusal of a device credential, of a user
// token; other errors are returned as they are.
func userTokenError(err error) error {
	switch err {
	case errCredentialMissing:
		return errUserTokenMissing
	case errCredentialInvalid:
		return errUserTokenInvalid
	}
	return err
}

// farmMember resolves {farm} and the caller's role on it. Non-members and
// unknown farms alike get 404.
func (s *server) farmMember(next http.Handler) http.Handler {
	return s.middleware(func(r *http.Request) (context.Context, error) {
		farmID, err := pathID(r, "farm")
		if err != nil {
			return nil, err
		}
		role, err := s.memberRole(r.Context(), farmID, currentUser(r).ID)
		if err != nil {
			return nil, err
		}
		if role == 0 {
			return nil, furrow.Errorf(furrow.ENOTFOUND, "The farm does not exist.")
		}
		ctx := context.WithValue(r.Context(), farmKey, farmID)
		return context.WithValue(ctx, roleKey, role), nil
	}, next)
}

// memberRole is the user's role on the farm; 0 when the user is not a
// member or the farm does not exist.
func (s *server) memberRole(ctx context.Context, farm, user uuid.UUID) (furrow.Role, error) {
	role, err := s.Farms.MemberRole(ctx, farm, user)
	if furrow.ErrorCode(err) == furrow.ENOTFOUND {
		return 0, nil
	}
	return role, err
}

// need admits callers holding at least role on the farm; others get 403.
func (s *server) need(role furrow.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return s.middleware(func(r *http.Request) (context.Context, error) {
			if currentRole(r) < role {
				return nil, furrow.Errorf(furrow.EFORBIDDEN, "This needs the %s role or higher on the farm.", role)
			}
			return r.Context(), nil
		}, next)
	}
}

// middleware runs check before next, answering its error instead.
func (s *server) middleware(check func(*http.Request) (context.Context, error), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, err := check(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func currentUser(r *http.Request) furrow.User {
	u, _ := r.Context().Value(userKey).(furrow.User)
	return u
}

func currentFarm(r *http.Request) uuid.UUID {
	id, _ := r.Context().Value(farmKey).(uuid.UUID)
	return id
}

func currentRole(r *http.Request) furrow.Role {
	role, _ := r.Context().Value(roleKey).(furrow.Role)
	return role
}

// pathID parses the uuid path parameter name; malformed is EINVALID.
func pathID(r *http.Request, name string) (uuid.UUID, error) {
	id, err := parseUUID(chi.URLParam(r, name))
	if err != nil {
		return uuid.Nil, furrow.Errorf(furrow.EINVALID, "The %s id in the path must be a UUID.", name)
	}
	return id, nil
}

// decodeBody reads a JSON object body into dst. Unknown fields are ignored.
// Too large is ETOOLARGE; anything else wrong is EINVALID naming the field.
func (s *server) decodeBody(w http.ResponseWriter, r *http.Request, dst any) error {
	b, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	return decodeJSON(b, dst)
}

// decodeJSON decodes b, which must be one JSON object, into dst.
func decodeJSON(b []byte, dst any) error {
	trimmed := strings.TrimLeft(string(b), " \t\r\n")
	if !strings.HasPrefix(trimmed, "{") || !json.Valid(b) {
		return furrow.Errorf(furrow.EINVALID, "The body must be a single valid JSON object.")
	}
	// The decoder would store U+FFFD in place of either, a text other
	// than the one sent (a name, a webhook's URL).
	if !furrow.ExactJSON(b) {
		return furrow.Errorf(furrow.EINVALID, "The body must be valid UTF-8, and its strings must hold no lone UTF-16 surrogate escape (\\uD800 to \\uDFFF).")
	}
	if err := json.Unmarshal(b, dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		var ferr *furrow.Error
		switch {
		case errors.As(err, &ferr):
			return ferr
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return furrow.Errorf(furrow.EINVALID, "The field %s must be a %s.", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
		}
		return furrow.Errorf(furrow.EINVALID, "The body does not have the expected fields.")
	}
	return nil
}

// jsonKind names a Go kind in JSON words for error messages.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "slice", "array":
		return "list"
	case "map", "struct":
		return "object"
	case "bool":
		return "boolean"
	}
	return "number"
}
