package devserver

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
)

const (
	clusterName         = "active"
	storeName           = "sqlite-default"
	visibilityStoreName = "sqlite-visibility"
)

// serverOptions assembles the in-process server: all services in one
// process, members found statically on loopback (no gossip), an
// allow-everything authorizer, the quiet logger and single-process tuning.
func serverOptions(r *resolved) []temporal.ServerOption {
	hostPort := func(port int) string { return net.JoinHostPort(r.ip, strconv.Itoa(port)) }
	return []temporal.ServerOption{
		temporal.WithConfig(serverConfig(r)),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: static.SingleLocalHost(hostPort(r.frontendPort)),
			primitives.HistoryService:  static.SingleLocalHost(hostPort(r.servicePorts["history"])),
			primitives.MatchingService: static.SingleLocalHost(hostPort(r.servicePorts["matching"])),
			primitives.WorkerService:   static.SingleLocalHost(hostPort(r.servicePorts["worker"])),
		}),
		temporal.WithLogger(serverLogger{log: r.logger}),
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper {
			return authorization.NewNoopClaimMapper()
		}),
		temporal.WithDynamicConfigClient(r.dynamic),
	}
}

// serverConfig is the static configuration: one history shard on SQLite,
// archival off, no metrics or pprof listeners.
func serverConfig(r *resolved) *config.Config {
	var c config.Config
	c.Global.Membership.MaxJoinDuration = 30 * time.Second
	c.Global.Membership.BroadcastAddress = r.ip
	c.Persistence = config.Persistence{
		DefaultStore:     storeName,
		VisibilityStore:  visibilityStoreName,
		NumHistoryShards: 1,
		DataStores: map[string]config.DataStore{
			storeName:           {SQL: r.sql},
			visibilityStoreName: {SQL: r.visSQL},
		},
	}
	c.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             r.frontendAddr,
				HTTPAddress:            net.JoinHostPort(r.ip, strconv.Itoa(r.servicePorts["http"])),
			},
		},
	}
	c.DCRedirectionPolicy.Policy = "noop"
	c.Services = map[string]config.Service{
		// The HTTP API serves Nexus callbacks; without it the frontend warns
		// at every start.
		"frontend": {RPC: config.RPC{GRPCPort: r.frontendPort, HTTPPort: r.servicePorts["http"], BindOnIP: r.ip}},
		"history":  {RPC: config.RPC{GRPCPort: r.servicePorts["history"], BindOnIP: r.ip}},
		"matching": {RPC: config.RPC{GRPCPort: r.servicePorts["matching"], BindOnIP: r.ip}},
		"worker":   {RPC: config.RPC{GRPCPort: r.servicePorts["worker"], BindOnIP: r.ip}},
	}
	c.Archival.History.State = "disabled"
	c.Archival.Visibility.State = "disabled"
	c.NamespaceDefaults.Archival.History.State = "disabled"
	c.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The server's own system workflows dial the frontend through this.
	c.PublicClient.HostPort = r.frontendAddr
	return &c
}

// sqlConfig points the SQLite plugin at dbFile, or, if it is empty, at a
// private in-memory database that the plugin sets up itself. The plugin keeps
// one connection per database for the life of the process.
func sqlConfig(dbFile string) *config.SQL {
	if dbFile == "" {
		return &config.SQL{
			PluginName:        sqliteplugin.PluginName,
			DatabaseName:      fmt.Sprintf("furrow-dev-%d", rand.Int64()),
			ConnectAttributes: map[string]string{"mode": "memory", "cache": "shared"},
		}
	}
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: dbFile,
		// WAL with synchronous=normal makes a commit one append without an
		// fsync: a process crash loses nothing, a power loss only the last
		// commits, which is the right trade for a dev server.
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"},
	}
}

// dynamicConfig tunes the server for one process serving one developer,
// where latency matters more than throughput isolation. It is a memory
// client so that a setting can be switched for a while (see
// refreshSearchAttributesFor).
func dynamicConfig() *dynamicconfig.MemoryClient {
	c := dynamicconfig.NewMemoryClient()
	for key, value := range map[dynamicconfig.Key]any{
		dynamicconfig.FrontendPersistenceMaxQPS.Key():    10000,
		dynamicconfig.HistoryPersistenceMaxQPS.Key():     45000,
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 8192,
		// The UI lists workflows often; don't throttle it.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// One partition per task queue: with one matching host and one worker,
		// extra partitions only add forwarding hops before a task meets a poller.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// See queueCheckpoint.
		dynamicconfig.TransferProcessorUpdateAckInterval.Key():   queueCheckpoint,
		dynamicconfig.VisibilityProcessorUpdateAckInterval.Key(): queueCheckpoint,
	} {
		c.OverrideValue(key, value)
	}
	return c
}

// queueCheckpoint is how often the transfer and visibility queues
// checkpoint. The one history shard keeps every task of a queue, done or
// not, until the next checkpoint (30 s by default); past the server's
// critical count of such tasks (history.queuePendingTaskCriticalCount) it
// splits the queue's slices and then walks them all for each new batch of
// tasks, a sixth of the CPU of a delivery at 200/s. At a delivery's two or
// three tasks in each queue, 5 s keeps the count under it up to about 600
// workflows a second, three times what one dev machine delivers.
const queueCheckpoint = 5 * time.Second

// searchAttributeCacheTTL is how long each service of the server keeps its
// copy of the search attributes (60 s in the server), plus a margin.
const searchAttributeCacheTTL = 65 * time.Second

// refreshSearchAttributesFor makes every service re-read the search
// attributes on each use, for as long as their caches may still miss ones
// just added. Forcing it always would cost a metadata read per workflow
// start and visibility record, 4% of the CPU of a delivery.
func refreshSearchAttributesFor(c *dynamicconfig.MemoryClient, d time.Duration) {
	undo := c.OverrideSetting(dynamicconfig.ForceSearchAttributesCacheRefreshOnRead, true)
	time.AfterFunc(d, undo)
}
