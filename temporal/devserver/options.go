package devserver

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/temporal/devserver/devaddr"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
)

// minRetention is the shortest namespace retention Temporal accepts.
const minRetention = 24 * time.Hour

// resolved is Options with defaults applied and every port chosen.
type resolved struct {
	ip               string // frontend and internal services bind here
	frontendPort     int
	frontendAddr     string
	servicePorts     map[string]int // history, matching, worker, http
	uiAddr           string
	disableUI        bool
	namespace        string
	dbFile           string // "" = in memory
	visFile          string // visibility records, beside dbFile
	sql              *config.SQL
	visSQL           *config.SQL
	retention        time.Duration
	searchAttributes map[string]enums.IndexedValueType
	logger           *slog.Logger // filtered to level
	level            *slog.LevelVar
	dynamic          *dynamicconfig.MemoryClient
}

// resolve validates opts, applies defaults and reserves ports.
func resolve(opts Options) (*resolved, error) {
	r := &resolved{
		disableUI:        opts.DisableUI,
		namespace:        orDefault(opts.Namespace, DefaultNamespace),
		retention:        opts.Retention,
		searchAttributes: opts.SearchAttributes,
		dynamic:          dynamicConfig(),
	}
	if r.retention == 0 {
		r.retention = DefaultRetention
	}
	if r.retention < minRetention {
		return nil, furrow.Errorf(furrow.EINVALID, "devserver: retention %s is shorter than %s", r.retention, minRetention)
	}
	for name, typ := range r.searchAttributes {
		if name == "" || typ == enums.INDEXED_VALUE_TYPE_UNSPECIFIED {
			return nil, furrow.Errorf(furrow.EINVALID, "devserver: search attribute %q needs a name and a type", name)
		}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	r.level = new(slog.LevelVar)
	r.level.Set(slog.LevelWarn)
	r.logger = slog.New(minLevelHandler{next: logger.Handler(), min: r.level})
	if err := r.resolveAddrs(opts); err != nil {
		return nil, err
	}
	if opts.DataDir != "" {
		if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("devserver: create data dir: %w", err)
		}
		r.dbFile = filepath.Join(opts.DataDir, dbFileName)
		r.visFile = filepath.Join(opts.DataDir, visibilityFileName)
	}
	r.sql = sqlConfig(r.dbFile)
	r.visSQL = r.sql
	if r.visFile != "" {
		r.visSQL = sqlConfig(r.visFile)
	}
	return r, nil
}

// resolveAddrs parses the frontend and UI addresses and picks the ports left
// to choose. The internal services and the frontend's HTTP API get free
// ports on the frontend's IP. Every port chosen is held until all are, so
// that no two of them can be the same.
func (r *resolved) resolveAddrs(opts Options) error {
	var held portHolds
	defer held.release()
	ip, port, err := splitAddr("frontend", orDefault(opts.FrontendAddr, DefaultFrontendAddr))
	if err != nil {
		return err
	}
	if r.frontendPort, err = held.choose(ip, port); err != nil {
		return fmt.Errorf("devserver: frontend address: %w", err)
	}
	r.ip = ip
	r.frontendAddr = net.JoinHostPort(ip, strconv.Itoa(r.frontendPort))
	r.servicePorts = map[string]int{}
	for _, svc := range []string{"history", "matching", "worker", "http"} {
		if r.servicePorts[svc], err = held.choose(ip, 0); err != nil {
			return fmt.Errorf("devserver: %s port: %w", svc, err)
		}
	}
	if r.disableUI {
		return nil
	}
	uiIP, uiPort, err := splitAddr("UI", orDefault(opts.UIAddr, DefaultUIAddr))
	if err != nil {
		return err
	}
	if uiPort, err = held.choose(uiIP, uiPort); err != nil {
		return fmt.Errorf("devserver: UI address: %w", err)
	}
	r.uiAddr = net.JoinHostPort(uiIP, strconv.Itoa(uiPort))
	return nil
}

// splitAddr parses "ip:port" as devaddr.Split does; what names the address
// in the error.
func splitAddr(what, addr string) (string, int, error) {
	ip, port, err := devaddr.Split(addr)
	if err != nil {
		return "", 0, furrow.Errorf(furrow.EINVALID, "devserver: %s address %v", what, err)
	}
	return ip, port, nil
}

// portHolds keeps the listeners of the ports chosen so far.
type portHolds []net.Listener

// choose returns port if it is free on ip, or a free port if port is 0,
// and holds it until release. Checking up front turns "address in use"
// into a clear error: the Temporal services and the UI server would
// otherwise fail late or exit the process.
func (h *portHolds) choose(ip string, port int) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return 0, err
	}
	*h = append(*h, l)
	return l.Addr().(*net.TCPAddr).Port, nil
}

// release frees every held port for the servers to bind.
func (h *portHolds) release() {
	for _, l := range *h {
		l.Close()
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
