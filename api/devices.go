package api

import (
	"net/http"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// createDevice claims a device on the farm: 201 {id,name,api_key}, the key
// shown only here.
func (s *server) createDevice(w http.ResponseWriter, r *http.Request) error {
	name, err := s.decodeName(w, r)
	if err != nil {
		return err
	}
	d, key, err := s.Devices.CreateDevice(r.Context(), currentFarm(r), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, struct {
		ID     uuid.UUID `json:"id"`
		Name   string    `json:"name"`
		APIKey string    `json:"api_key"`
	}{d.ID, d.Name, key})
	return nil
}

// rotateKey issues a new key for the device, revoking the old one: 201
// {api_key}. A device of another farm is 404.
func (s *server) rotateKey(w http.ResponseWriter, r *http.Request) error {
	deviceID, err := pathID(r, "device")
	if err != nil {
		return err
	}
	key, err := s.Devices.RotateDeviceKey(r.Context(), currentFarm(r), deviceID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]string{"api_key": key})
	return nil
}

// deviceOut is a device as listed, with its reporting status.
type deviceOut struct {
	ID         uuid.UUID `json:"id"`
	Name       string    `json:"name"`
	Status     string    `json:"status"`
	LastSeenMs *int64    `json:"last_seen_ms"`
}

// listDevices lists the farm's devices with their status now, by name:
// 200. Every device unless ?limit= or ?cursor= asks for a page; then the
// Furrow-Next-Cursor header holds the cursor of the next page while more
// remain.
func (s *server) listDevices(w http.ResponseWriter, r *http.Request) error {
	f, err := deviceFilter(r)
	if err != nil {
		return err
	}
	devices, next, err := s.Devices.Devices(r.Context(), f)
	if err != nil {
		return err
	}
	now := s.Clock.Now()
	out := make([]deviceOut, 0, len(devices))
	for _, d := range devices {
		out = append(out, deviceOut{d.ID, d.Name, d.Status(now, s.cfg.Thresholds), d.LastSeenMs})
	}
	if next != nil {
		w.Header().Set(nextCursorHeader, encodeDeviceCursor(*next))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deviceFilter reads the query of the devices list; malformed is EINVALID.
func deviceFilter(r *http.Request) (furrow.DeviceFilter, error) {
	f := furrow.DeviceFilter{FarmID: currentFarm(r)}
	after, err := queryDeviceCursor(r)
	if err != nil {
		return f, err
	}
	f.After = after
	if r.URL.Query().Get("limit") != "" || after != nil {
		f.Limit, err = queryLimit(r)
	}
	return f, err
}
