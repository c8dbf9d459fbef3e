package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// user creates a user with a unique email.
func (e *env) user() (furrow.User, string) {
	e.t.Helper()
	u, token, err := e.Users.CreateUser(e.ctx, uuid.NewString()+"@example.com")
	e.must(err)
	return u, token
}

// farm creates a farm owned by a new user.
func (e *env) farm() (furrow.Farm, furrow.User) {
	e.t.Helper()
	owner, _ := e.user()
	f, err := e.Farms.CreateFarm(e.ctx, owner.ID, "North field")
	e.must(err)
	return f, owner
}

// UserService checks the furrow.UserService contract.
func UserService(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"CreateUserThenByToken": func(e *env) {
			u, token, err := e.Users.CreateUser(e.ctx, "ada@example.com")
			e.must(err)
			if u.ID == uuid.Nil || u.Email != "ada@example.com" {
				e.t.Fatalf("created %+v", u)
			}
			if !strings.HasPrefix(token, furrow.UserTokenPrefix) {
				e.t.Fatalf("token %q lacks the prefix %q", token, furrow.UserTokenPrefix)
			}
			got, err := e.Users.UserByToken(e.ctx, token)
			e.must(err)
			if got != u {
				e.t.Fatalf("UserByToken = %+v, want %+v", got, u)
			}
		},
		"TakenEmailIsConflict": func(e *env) {
			_, _, err := e.Users.CreateUser(e.ctx, "bo@example.com")
			e.must(err)
			_, _, err = e.Users.CreateUser(e.ctx, "bo@example.com")
			e.wantCode(err, furrow.ECONFLICT, "second CreateUser with one email")
		},
		"MalformedEmailIsInvalid": func(e *env) {
			for _, email := range []string{"", "ada", "ada @example.com", "ada@", "@example.com", "a@b@c"} {
				_, _, err := e.Users.CreateUser(e.ctx, email)
				e.wantCode(err, furrow.EINVALID, fmt.Sprintf("CreateUser(%q)", email))
			}
		},
		"UnknownTokenIsUnauthorized": func(e *env) {
			e.user()
			_, err := e.Users.UserByToken(e.ctx, furrow.UserTokenPrefix+"unknown")
			e.wantCode(err, furrow.EUNAUTHORIZED, "UserByToken(unknown)")
		},
	})
}

// FarmService checks the furrow.FarmService contract.
func FarmService(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"CreatorIsOwner": func(e *env) {
			f, owner := e.farm()
			if f.ID == uuid.Nil || f.Name != "North field" {
				e.t.Fatalf("created %+v", f)
			}
			role, err := e.Farms.MemberRole(e.ctx, f.ID, owner.ID)
			e.must(err)
			if role != furrow.RoleOwner {
				e.t.Fatalf("creator's role %v, want owner", role)
			}
		},
		"AddMember": func(e *env) {
			f, _ := e.farm()
			u, _ := e.user()
			e.must(e.Farms.AddMember(e.ctx, furrow.Member{FarmID: f.ID, UserID: u.ID, Role: furrow.RoleViewer}))
			role, err := e.Farms.MemberRole(e.ctx, f.ID, u.ID)
			e.must(err)
			if role != furrow.RoleViewer {
				e.t.Fatalf("role %v, want viewer", role)
			}
			err = e.Farms.AddMember(e.ctx, furrow.Member{FarmID: f.ID, UserID: u.ID, Role: furrow.RoleManager})
			e.wantCode(err, furrow.ECONFLICT, "adding a member twice")
		},
		"AddUnknownUserIsNotFound": func(e *env) {
			f, _ := e.farm()
			err := e.Farms.AddMember(e.ctx, furrow.Member{FarmID: f.ID, UserID: uuid.New(), Role: furrow.RoleViewer})
			e.wantCode(err, furrow.ENOTFOUND, "AddMember(unknown user)")
		},
		"NonMemberAndUnknownFarmAreNotFound": func(e *env) {
			f, owner := e.farm()
			outsider, _ := e.user()
			_, err := e.Farms.MemberRole(e.ctx, f.ID, outsider.ID)
			e.wantCode(err, furrow.ENOTFOUND, "MemberRole(non-member)")
			_, err = e.Farms.MemberRole(e.ctx, uuid.New(), owner.ID)
			e.wantCode(err, furrow.ENOTFOUND, "MemberRole(unknown farm)")
		},
	})
}
