package api

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/furrowhq/furrow"
)

// maxNameChars bounds farm and device names, in characters (Unicode code
// points) as the OpenAPI document's maxLength counts them.
const maxNameChars = 200

// createFarm creates a farm owned by the caller: 201 {id,name}.
func (s *server) createFarm(w http.ResponseWriter, r *http.Request) error {
	name, err := s.decodeName(w, r)
	if err != nil {
		return err
	}
	farm, err := s.Farms.CreateFarm(r.Context(), currentUser(r).ID, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, farm)
	return nil
}

// addMember gives a user a role no higher than the caller's own: 201
// {user_id,role}.
func (s *server) addMember(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		UserID string `json:"user_id"`
		Role   string `json:"role"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	userID, err := furrow.ParseUUID(in.UserID)
	if err != nil {
		return furrow.Errorf(furrow.EINVALID, "The field user_id must be a UUID.")
	}
	role, err := furrow.ParseRole(in.Role)
	if err != nil {
		return err
	}
	if role > currentRole(r) {
		return furrow.Errorf(furrow.EFORBIDDEN, "You cannot grant a role above your own (%s).", currentRole(r))
	}
	m := furrow.Member{FarmID: currentFarm(r), UserID: userID, Role: role}
	if err := s.Farms.AddMember(r.Context(), m); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, m)
	return nil
}

// decodeName reads a body {name} and returns the checked name.
func (s *server) decodeName(w http.ResponseWriter, r *http.Request) (string, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return "", err
	}
	return checkName(in.Name)
}

// checkName trims a name and requires 1..maxNameChars characters of valid
// UTF-8.
func checkName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", furrow.Errorf(furrow.EINVALID, "The field name is required.")
	case utf8.RuneCountInString(name) > maxNameChars || !utf8.ValidString(name) || strings.ContainsRune(name, 0):
		return "", furrow.Errorf(furrow.EINVALID, "The field name must be valid text of at most %d characters.", maxNameChars)
	}
	return name, nil
}
