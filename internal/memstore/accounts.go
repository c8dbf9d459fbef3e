package memstore

import (
	"context"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// member keys a farm membership.
type member struct{ farm, user uuid.UUID }

// userToken is what CreateUser returns besides the error.
type userToken struct {
	user  furrow.User
	token string
}

// CreateUser implements furrow.UserService.
func (s *Store) CreateUser(ctx context.Context, email string) (furrow.User, string, error) {
	r, err := do(ctx, s, "CreateUser", []any{email}, func() (userToken, error) {
		if err := furrow.CheckEmail(email); err != nil {
			return userToken{}, err
		}
		for _, u := range s.users {
			if u.Email == email {
				return userToken{}, furrow.Errorf(furrow.ECONFLICT, "A user with this email already exists.")
			}
		}
		u := furrow.User{ID: uuid.New(), Email: email}
		token := furrow.NewUserToken()
		s.users[u.ID] = u
		s.tokens[furrow.HashSecret(token)] = u.ID
		return userToken{u, token}, nil
	})
	return r.user, r.token, err
}

// UserByToken implements furrow.UserService.
func (s *Store) UserByToken(ctx context.Context, token string) (furrow.User, error) {
	return do(ctx, s, "UserByToken", []any{token}, func() (furrow.User, error) {
		id, ok := s.tokens[furrow.HashSecret(token)]
		if !ok {
			return furrow.User{}, furrow.Errorf(furrow.EUNAUTHORIZED, "The token is invalid.")
		}
		return s.users[id], nil
	})
}

// CreateFarm implements furrow.FarmService.
func (s *Store) CreateFarm(ctx context.Context, owner uuid.UUID, name string) (furrow.Farm, error) {
	return do(ctx, s, "CreateFarm", []any{owner, name}, func() (furrow.Farm, error) {
		if _, ok := s.users[owner]; !ok {
			return furrow.Farm{}, notFound("user")
		}
		f := furrow.Farm{ID: uuid.New(), Name: name}
		s.farms[f.ID] = f
		s.members[member{f.ID, owner}] = furrow.RoleOwner
		return f, nil
	})
}

// AddMember implements furrow.FarmService.
func (s *Store) AddMember(ctx context.Context, m furrow.Member) error {
	_, err := do(ctx, s, "AddMember", []any{m}, func() (none, error) {
		switch _, taken := s.members[member{m.FarmID, m.UserID}]; {
		case m.Role.String() == "":
			return nil, furrow.Errorf(furrow.EINVALID, "The role is not valid.")
		case taken:
			return nil, furrow.Errorf(furrow.ECONFLICT, "The user is already a member of the farm.")
		}
		if _, ok := s.farms[m.FarmID]; !ok {
			return nil, notFound("farm")
		}
		if _, ok := s.users[m.UserID]; !ok {
			return nil, notFound("user")
		}
		s.members[member{m.FarmID, m.UserID}] = m.Role
		return nil, nil
	})
	return err
}

// MemberRole implements furrow.FarmService.
func (s *Store) MemberRole(ctx context.Context, farmID, userID uuid.UUID) (furrow.Role, error) {
	return do(ctx, s, "MemberRole", []any{farmID, userID}, func() (furrow.Role, error) {
		role, ok := s.members[member{farmID, userID}]
		if !ok {
			return 0, notFound("farm membership")
		}
		return role, nil
	})
}

func (r userToken) first() any { return r.user }
