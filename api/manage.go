package api

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"

	"github.com/furrowhq/furrow"
	"github.com/go-chi/chi/v5"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/uuid"
)

// farmRoutes is the management API under /api/farms. Its routes are
// registered whole on r, the API's router, with their checks inline rather
// than on a mounted subrouter: a mount serves every method and the
// slash-ended path, and its checks would run before routing. So a path
// that is not a route is 404 and a method it lacks 405, before any
// credential, as everywhere in the API; then checks run in this order:
// user credential (401), ids in the path (400), membership (404, so that
// a farm's existence does not leak), role (403), then the body.
func (s *server) farmRoutes(r chi.Router) {
	r = r.With(noStore, s.authUser(bearer))
	r.Post("/api/farms", s.handle(s.createFarm))
	r.Group(func(r chi.Router) {
		r.Use(s.farmMember, s.wellFormedQuery)
		viewer, manager := s.need(furrow.RoleViewer), s.need(furrow.RoleManager)
		const farm = "/api/farms/{farm}"
		r.With(manager).Post(farm+"/members", s.handle(s.addMember))
		r.With(manager).Post(farm+"/devices", s.handle(s.createDevice))
		r.With(manager).Post(farm+"/devices/{device}/keys", s.handle(s.rotateKey))
		r.With(viewer).Get(farm+"/devices", s.handle(s.listDevices))
		r.With(manager).Post(farm+"/webhooks", s.handle(s.createWebhook))
		r.With(manager).Get(farm+"/webhooks", s.handle(s.listWebhooks))
		r.With(manager).Get(farm+"/webhooks/{webhook}", s.handle(s.getWebhook))
		r.With(manager).Delete(farm+"/webhooks/{webhook}", s.handle(s.deleteWebhook))
		r.With(manager).Post(farm+"/webhooks/{webhook}/enable", s.handle(s.enableWebhook))
		r.With(manager).Post(farm+"/webhooks/{webhook}/secret/rotate", s.handle(s.rotateSecret))
		r.With(manager).Get(farm+"/webhooks/{webhook}/attempts", s.handle(s.listAttempts))
		r.With(manager).Post(farm+"/webhooks/{webhook}/redeliver", s.handle(s.redeliver))
		r.With(manager).Post(farm+"/webhooks/{webhook}/test", s.handle(s.testWebhook))
		r.With(manager).Patch(farm+"/webhooks/{webhook}", s.handle(s.updateWebhook))
		r.With(manager).Post(farm+"/events", s.handle(s.createEvent))
		r.With(viewer).Get(farm+"/events", s.handle(s.listEvents))
		r.With(viewer).Get(farm+"/readings", s.handle(s.listReadings))
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
			if strings.HasPrefix(token, furrow.DeviceKeyPrefix) {
				return nil, errDeviceKeyForUser
			}
			u, err := s.Users.UserByToken(r.Context(), token)
			if err != nil {
				return nil, userTokenError(unauthorizedOr(err, errCredentialInvalid))
			}
			return context.WithValue(r.Context(), userKey, u), nil
		}, next)
	}
}

// The refusals of a user token: the device credential's, said of a token.
var (
	errUserTokenMissing = furrow.Errorf(furrow.EUNAUTHORIZED, "The credential is missing: send Authorization: Bearer <user token>.")
	errUserTokenInvalid = furrow.Errorf(furrow.EUNAUTHORIZED, "The credential is invalid: no user has this token.")
	// errDeviceKeyForUser refuses a device key where a user token goes,
	// without a lookup.
	errDeviceKeyForUser = furrow.Errorf(furrow.EUNAUTHORIZED, "The credential is a device key: this API takes a user token (Authorization: Bearer fut_…).")
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
	id, err := furrow.ParseUUID(chi.URLParam(r, name))
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

// decodeJSON decodes b, which must be one JSON object, into dst. Names
// match exactly and a name given twice in one object, at any depth, is
// refused: encoding/json would take "Name" for "name" and keep the last
// copy, so a body could say one thing to a reader and store another.
func decodeJSON(b []byte, dst any) error {
	trimmed := strings.TrimLeft(string(b), " \t\r\n")
	// The syntax alone first, so that malformed JSON outranks a name given
	// twice, and text that is not exact gets ExactJSON's reason below.
	syntax := []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}
	if !strings.HasPrefix(trimmed, "{") || !jsontext.Value(b).IsValid(syntax...) {
		return errBodyNotJSON
	}
	// The decoder would store U+FFFD in place of either, a text other
	// than the one sent (a name, a webhook's URL).
	if !furrow.ExactJSON(b) {
		return furrow.Errorf(furrow.EINVALID, "The body must be valid UTF-8, and its strings must hold no lone UTF-16 surrogate escape (\\uD800 to \\uDFFF).")
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return decodeError(err)
	}
	return nil
}

// decodeError says what json.Unmarshal refused in a body, naming the
// field: the top-level member the refusal is in.
func decodeError(err error) error {
	var ferr *furrow.Error
	var synErr *jsontext.SyntacticError
	var semErr *json.SemanticError
	switch {
	case errors.As(err, &ferr):
		return ferr
	case errors.As(err, &synErr) && errors.Is(synErr.Err, jsontext.ErrDuplicateName):
		if field, inner := splitPointer(synErr.JSONPointer); inner != "" {
			return furrow.Errorf(furrow.EINVALID, "The field %s gives the name %q more than once in one object.", field, inner)
		} else if field != "" {
			return furrow.Errorf(furrow.EINVALID, "The field %s is given more than once.", field)
		}
	case errors.As(err, &semErr) && semErr.GoType != nil:
		want := semErr.GoType
		for want.Kind() == reflect.Pointer {
			want = want.Elem()
		}
		if field, inner := splitPointer(semErr.JSONPointer); inner != "" {
			return furrow.Errorf(furrow.EINVALID, "The field %s holds %s where %s is expected.", field, jsonKindOf(semErr.JSONKind), jsonKind(want.Kind()))
		} else if field != "" {
			return furrow.Errorf(furrow.EINVALID, "The field %s must be %s.", field, jsonKind(want.Kind()))
		}
	}
	return furrow.Errorf(furrow.EINVALID, "The body does not have the expected fields.")
}

// splitPointer returns the top-level member a JSON pointer is in and, when
// it points deeper, its last name or index.
func splitPointer(p jsontext.Pointer) (field, inner string) {
	first := true
	for tok := range p.Tokens() {
		if first {
			field, first = tok, false
		} else {
			inner = tok
		}
	}
	return field, inner
}

// jsonKindOf names a JSON kind as jsonKind names Go kinds.
func jsonKindOf(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '[':
		return "a list"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonKind names a Go kind in JSON words, as jsonKindOf names the JSON
// kind that decodes into it.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return jsonKindOf('"')
	case reflect.Slice, reflect.Array:
		return jsonKindOf('[')
	case reflect.Map, reflect.Struct:
		return jsonKindOf('{')
	case reflect.Bool:
		return jsonKindOf('t')
	}
	return jsonKindOf('0')
}
