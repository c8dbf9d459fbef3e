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
		temporal.WithDynamicConfigClient(dynamicConfig()),
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
// where latency matters more than throughput isolation.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// Search attributes registered at start are usable at once.
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		// The forced refresh reads persistence more often; lift the caps.
		dynamicconfig.FrontendPersistenceMaxQPS.Key():    10000,
		dynamicconfig.HistoryPersistenceMaxQPS.Key():     45000,
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 8192,
		// The UI lists workflows often; don't throttle it.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// One partition per task queue: with one matching host and one worker,
		// extra partitions only add forwarding hops before a task meets a poller.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
	}
}
