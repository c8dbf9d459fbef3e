package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"time"

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
	s.keys.forgetDevice(deviceID)
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
	f, whole, err := deviceFilter(r)
	if err != nil {
		return err
	}
	if whole {
		return s.writeAllDevices(w, r, f)
	}
	devices, next, err := s.Devices.Devices(r.Context(), f)
	if err != nil {
		return err
	}
	now := s.Clock.Now()
	out := make([]deviceOut, 0, len(devices))
	for _, d := range devices {
		out = append(out, s.deviceOut(d, now))
	}
	if next != nil {
		w.Header().Set(nextCursorHeader, encodeDeviceCursor(*next))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deviceOut is d as listed at now.
func (s *server) deviceOut(d furrow.Device, now time.Time) deviceOut {
	return deviceOut{d.ID, d.Name, d.Status(now, s.cfg.Thresholds), d.LastSeenMs}
}

// deviceFilter reads the query of the devices list; malformed is EINVALID.
// whole says that it asks for every device rather than a page.
func deviceFilter(r *http.Request) (f furrow.DeviceFilter, whole bool, err error) {
	f = furrow.DeviceFilter{FarmID: currentFarm(r)}
	if f.After, err = queryDeviceCursor(r); err != nil {
		return f, false, err
	}
	if r.URL.Query().Get("limit") == "" && f.After == nil {
		return f, true, nil
	}
	f.Limit, err = queryLimit(r)
	return f, false, err
}

// writeAllDevices answers every device of f's farm as one JSON array,
// written while it is read a page at a time: a farm of a million devices
// costs the server a page of memory, not the whole list. Each page has the
// request's deadline to be read and written, rather than the whole list
// one: however large the farm, and however slowly the client reads, the
// list goes on while each page does. A failure before the first device is
// answered as usual; after it, the status is sent, so the connection is
// cut before the array closes and no client can take what it got for the
// whole list.
func (s *server) writeAllDevices(w http.ResponseWriter, r *http.Request, f furrow.DeviceFilter) error {
	f.Limit = furrow.MaxListLimit
	now := s.Clock.Now()
	rc := http.NewResponseController(w)
	var out *bufio.Writer
	for {
		ctx, cancel := s.stepContext(r)
		// The server's write deadline bounds one request; here it bounds a
		// page. A writer that cannot set it (a test's) keeps its own.
		_ = rc.SetWriteDeadline(time.Now().Add(2 * s.cfg.RequestTimeout))
		page, next, err := s.Devices.Devices(ctx, f)
		cancel()
		if err == nil && out == nil {
			w.Header()["Content-Type"] = contentTypeJSON
			w.WriteHeader(http.StatusOK)
			out = bufio.NewWriterSize(w, 32<<10)
			err = out.WriteByte('[')
		}
		for i := 0; err == nil && i < len(page); i++ {
			err = s.writeDevice(out, page[i], now, f.After == nil && i == 0)
		}
		if err == nil && next == nil {
			if _, err = out.WriteString("]\n"); err == nil {
				err = out.Flush()
			}
		}
		switch {
		case err != nil && out == nil:
			return err
		case err != nil:
			s.Logger.WarnContext(r.Context(), "devices list cut off", "request_id", RequestID(r.Context()),
				"farm_id", f.FarmID, "error", err)
			panic(http.ErrAbortHandler)
		case next == nil:
			return nil
		}
		f.After = next
	}
}

// writeDevice writes d as an element of the devices list, after a comma
// unless it is the first.
func (s *server) writeDevice(out *bufio.Writer, d furrow.Device, now time.Time, first bool) error {
	b, err := json.Marshal(s.deviceOut(d, now))
	if err != nil {
		return err
	}
	if !first {
		if err := out.WriteByte(','); err != nil {
			return err
		}
	}
	_, err = out.Write(b)
	return err
}
