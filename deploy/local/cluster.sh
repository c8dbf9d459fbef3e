#!/usr/bin/env bash
# The production topology as local processes: a PostgreSQL-backed Temporal
# server built from the official module, Redis, a migration run, 2 × furrow
# serve and 2 × furrow worker, each on loopback with its own port.
#
#   deploy/local/cluster.sh build        only build the Temporal server and SQL tool (once)
#   deploy/local/cluster.sh up           start everything; prints "name: address" lines
#                                        (the database's without its password)
#   deploy/local/cluster.sh down         stop exactly what up started, drop its databases
#   deploy/local/cluster.sh status       show which processes run
#   deploy/local/cluster.sh stop NAME [SIGNAL]   stop one process (TERM waits for its exit)
#   deploy/local/cluster.sh start NAME   start one process again, on the same port
#
# NAME is serve-1, serve-2, worker-1, worker-2, temporal or redis. Every
# FURROW_* variable of the environment of `up` reaches each Furrow process
# (the topology's own addresses win). Knobs of the script itself:
#   CLUSTER_DIR        run directory (pids, logs, config)     [.furrow/cluster]
#   CLUSTER_CACHE      where the Temporal binaries are built  [~/.cache/furrow-cluster]
#                      (the 3 most recently used builds are kept)
#   CLUSTER_PGHOST / CLUSTER_PGPORT / CLUSTER_PGUSER / CLUSTER_PGPASSWORD
#                      the PostgreSQL server for the scratch databases [127.0.0.1 5432 postgres ""]
#   CLUSTER_FURROW_BIN a furrow binary to use instead of building one
#   CLUSTER_SERVES / CLUSTER_WORKERS  how many of each             [2 / 2]
#   CLUSTER_TEMPORAL_GOGC  GOGC of the Temporal server                [400]
#   CLUSTER_TEMPORAL_MAXCONNS / CLUSTER_VISIBILITY_MAXCONNS
#                      maxConns of Temporal's default and visibility stores,
#                      per Temporal service                               [20 / 10]
#   CLUSTER_FURROW_POOL  connection pool of each serve and worker         [16]
#   CLUSTER_PPROF=1    serve the Go profiler of each Furrow process on a
#                      loopback port of its own (FURROW_PPROF_ADDR); `up`
#                      prints "pprof NAME: ADDRESS" lines, the Temporal
#                      server's among them
#
# Connection budget: `up` refuses to start when PostgreSQL cannot hold every
# pool at once (a starved pool waits instead of failing, and the topology
# then delivers a fraction of its rate without saying why). It needs
#   4 Temporal services x (TEMPORAL_MAXCONNS + VISIBILITY_MAXCONNS)
#   + (serves + workers) x max(FURROW_POOL, 5) + 10 headroom (migrate, admin, psql)
# below max_connections - superuser_reserved_connections - connections in
# use: with the defaults 4 x 30 + 4 x 16 + 10 = 194.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN=${CLUSTER_DIR:-$ROOT/.furrow/cluster}
CACHE=${CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/furrow-cluster}
PGHOST_=${CLUSTER_PGHOST:-127.0.0.1}
PGPORT_=${CLUSTER_PGPORT:-5432}
PGUSER_=${CLUSTER_PGUSER:-postgres}
PGPASSWORD_=${CLUSTER_PGPASSWORD:-}
STATE=$RUN/state
export PATH="/usr/local/go/bin:$PATH"

say() { echo "cluster: $*" >&2; }
die() {
  say "$*"
  exit 1
}

# free_port VAR sets VAR to a loopback port nobody listens on and no earlier
# call handed out. It must run in this shell, never in $(...): a subshell's
# record of the ports it handed out dies with it, and two services of one
# topology then get the same port.
TAKEN=" "
free_port() {
  local p
  while :; do
    # Temporal keeps membership ports in a smallint column: stay below
    # 32768. The end-to-end tests' own servers take ports below 20000
    # (internal/loopback), so the two never draw the same one.
    p=$((20000 + RANDOM % 12000))
    [[ $TAKEN == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      TAKEN+="$p "
      printf -v "$1" %s "$p"
      return
    fi
  done
}

# TEMPORAL_SERVICE_PORTS names the ports of the Temporal server besides its
# frontend's gRPC port (TEMPORAL_PORT), in the order the config uses them.
TEMPORAL_SERVICE_PORTS="FRONTEND_MEMBERSHIP FRONTEND_HTTP HISTORY_GRPC HISTORY_MEMBERSHIP
  MATCHING_GRPC MATCHING_MEMBERSHIP WORKER_GRPC WORKER_MEMBERSHIP"

# alloc_ports SERVES WORKERS chooses every port of the topology, each once,
# and prints the state file's assignments of them, one a line. Call it in
# this shell (a redirection is fine, $(...) is not): see free_port.
alloc_ports() {
  local name vars="TEMPORAL_PORT TEMPORAL_PPROF_PORT REDIS_PORT $TEMPORAL_SERVICE_PORTS" v
  for name in $(seq -f "serve_%g" 1 "$1") $(seq -f "worker_%g" 1 "$2"); do
    vars+=" ${name}_PORT ${name}_METRICS_PORT ${name}_PPROF_PORT"
  done
  for v in $vars; do
    free_port "$v"
    echo "$v=${!v}"
  done
}

TEMPORAL_MAXCONNS=${CLUSTER_TEMPORAL_MAXCONNS:-20}
VISIBILITY_MAXCONNS=${CLUSTER_VISIBILITY_MAXCONNS:-10}
# The script's own names stay out of FURROW_*: every exported FURROW_*
# variable is forwarded to the Furrow processes and would override them.
furrow_pool=${CLUSTER_FURROW_POOL:-16}
# store.Open keeps at least 5 connections (4 + the group-commit writer)
# whatever the pool asked for.
STORE_MIN_CONNS=5
TEMPORAL_SERVICES=4 # frontend, history, matching, worker: each opens its own pools
BUDGET_HEADROOM=10

# pg_ask prints the answer to one query of the server's settings, unaligned.
pg_ask() { PGPASSWORD=$PGPASSWORD_ psql -h "$PGHOST_" -p "$PGPORT_" -U "$PGUSER_" -d postgres -Atc "$1"; }

# check_budget refuses to go on when PostgreSQL cannot hold the topology's
# connections; it names the setting and the numbers.
check_budget() {
  local serves=$1 workers=$2 temporal furrow need line max reserved used free
  local pool=$((furrow_pool > STORE_MIN_CONNS ? furrow_pool : STORE_MIN_CONNS))
  temporal=$((TEMPORAL_SERVICES * (TEMPORAL_MAXCONNS + VISIBILITY_MAXCONNS)))
  furrow=$(((serves + workers) * pool))
  need=$((temporal + furrow + BUDGET_HEADROOM))
  command -v psql >/dev/null || {
    say "psql not found: cannot check PostgreSQL's max_connections against the $need connections this topology needs"
    return 0
  }
  line=$(pg_ask "SELECT current_setting('max_connections') || ' ' || current_setting('superuser_reserved_connections') || ' ' || (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')" 2>&1) ||
    die "cannot reach PostgreSQL at $PGHOST_:$PGPORT_ to check its connection budget: $line"
  read -r max reserved used <<<"$line"
  free=$((max - reserved - used))
  if ((need > free)); then
    die "PostgreSQL max_connections is $max ($reserved reserved for superusers, $used in use): this topology needs $need connections, $((need - free)) more than are free.
  Temporal: $TEMPORAL_SERVICES services x (maxConns $TEMPORAL_MAXCONNS + visibility $VISIBILITY_MAXCONNS) = $temporal
  Furrow:   $((serves + workers)) processes ($serves serve, $workers worker) x pool $pool = $furrow
  headroom: $BUDGET_HEADROOM
Raise max_connections to at least $((need + reserved + used)) (ALTER SYSTEM SET max_connections = $((((need + reserved + used + 49) / 50) * 50)); then restart PostgreSQL),
or lower CLUSTER_SERVES, CLUSTER_WORKERS, CLUSTER_FURROW_POOL or CLUSTER_TEMPORAL_MAXCONNS."
  fi
  say "connection budget: $need of $free free connections (max_connections $max): Temporal $temporal, Furrow $furrow, headroom $BUDGET_HEADROOM"
}

# check_autovacuum says, without stopping, when PostgreSQL does not vacuum
# on its own: dead row versions then stay in the tables and new partitions
# are never analyzed (docs/operating/production.md, "Vacuuming").
check_autovacuum() {
  local on
  command -v psql >/dev/null || return 0
  on=$(pg_ask "SELECT current_setting('autovacuum')::bool AND current_setting('track_counts')::bool" 2>/dev/null) || return 0
  if [ "$on" != t ]; then
    say "warning: PostgreSQL's autovacuum is off: dead row versions stay in the tables and their indexes, and new partitions are never analyzed.
  Turn it on: ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf();"
  fi
}

# sql_tool hands the password over in SQL_PASSWORD, which the tool reads
# when --pw is absent: a command line is readable by every user (ps).
sql_tool() { SQL_PASSWORD=$PGPASSWORD_ "$TBIN/temporal-sql-tool" --plugin postgres12 --ep "$PGHOST_" -p "$PGPORT_" -u "$PGUSER_" "$@"; }

# urlenc STRING prints STRING percent-encoded but for RFC 3986's unreserved
# characters: a / @ : # ? or ' of a user name or password would otherwise
# end its part of a URL (and a ' the state file's quoting).
urlenc() {
  local LC_ALL=C s=$1 out="" c i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case $c in
    [A-Za-z0-9._~-]) out+=$c ;;
    *) printf -v c '%%%02X' "'$c" && out+=$c ;;
    esac
  done
  printf '%s' "$out"
}

# pg_url DB [PASSWORD] prints the URL of the scratch database DB.
pg_url() {
  local auth
  auth=$(urlenc "$PGUSER_")
  [[ -z ${2:-} ]] || auth+=":$(urlenc "$2")"
  printf 'postgres://%s@%s:%s/%s?sslmode=disable' "$auth" "$PGHOST_" "$PGPORT_" "$1"
}

# shq VALUE prints VALUE single-quoted for the shell, ' as '\'': sourcing
# the state file gives back any value. (Not printf %q: the end-to-end tests
# read VISIBILITY_URL by trimming single quotes, and %q writes \? for ?.)
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# yaml_quote VALUE prints VALUE as a single-quoted YAML scalar, ' as ''. A
# newline would fold into a space there, so it is refused.
yaml_quote() {
  [[ $1 != *$'\n'* ]] || die "a newline in a PostgreSQL setting cannot go into temporal.yaml"
  printf "'%s'" "${1//\'/\'\'}"
}

# temporal_bins builds the official server and SQL tool from the module
# in go.mod (both are tools there) into the cache, once for each go.sum.
# Built inside Furrow's module, they share the compiled packages of the
# server Furrow embeds for `furrow dev`, so a cold machine compiles the
# server's dependencies once, not twice.
temporal_bins() {
  local version sum
  version=$(cd "$ROOT" && go list -m -f '{{.Version}}' go.temporal.io/server)
  sum=$(sha256sum "$ROOT/go.sum" | cut -c1-12)
  TBIN=$CACHE/temporal-$version-$sum
  mkdir -p "$TBIN"
  touch "$TBIN"
  prune_temporal_bins
  if [[ -x $TBIN/temporal-server && -x $TBIN/temporal-sql-tool ]]; then
    return
  fi
  say "building the Temporal server $version and its SQL tool into $TBIN (once; takes minutes)"
  (cd "$ROOT" && go build -o "$TBIN/temporal-server.tmp" go.temporal.io/server/cmd/server &&
    go build -o "$TBIN/temporal-sql-tool.tmp" go.temporal.io/server/cmd/tools/sql) ||
    die "building the Temporal server failed"
  mv "$TBIN/temporal-server.tmp" "$TBIN/temporal-server"
  mv "$TBIN/temporal-sql-tool.tmp" "$TBIN/temporal-sql-tool"
}

# KEEP_BUILDS is how many builds of the Temporal server the cache keeps:
# the one in use and the most recently used others, so that switching
# between a few checkouts does not rebuild. Each is about 270 MB.
KEEP_BUILDS=3

# prune_temporal_bins removes the cache's builds (temporal-*) beyond the
# KEEP_BUILDS most recently used; TBIN, just used, is always kept. A cluster
# still running from a removed build goes on (its processes keep their
# files), but `start NAME` cannot restart it.
prune_temporal_bins() {
  local dir n=0
  while IFS= read -r dir; do
    [[ $dir == "$TBIN" ]] && continue
    n=$((n + 1))
    if ((n >= KEEP_BUILDS)); then
      say "removing the unused Temporal build $dir"
      rm -rf "$dir"
    fi
  done < <(ls -1dt "$CACHE"/temporal-* 2>/dev/null)
}

furrow_bins() {
  mkdir -p "$RUN/bin"
  if [[ -n ${CLUSTER_FURROW_BIN:-} ]]; then
    ln -sf "$CLUSTER_FURROW_BIN" "$RUN/bin/furrow"
  else
    say "building furrow (production build)"
    (cd "$ROOT" && go build -tags nodev -o "$RUN/bin/furrow" ./cmd/furrow)
  fi
  (cd "$ROOT" && go build -o "$RUN/bin/temporalsetup" ./internal/temporalsetup)
}

# write_temporal_config writes the server's static configuration: both
# stores on PostgreSQL, every service on its own loopback port.
write_temporal_config() {
  local addr user password mask
  addr=$(yaml_quote "$PGHOST_:$PGPORT_")
  user=$(yaml_quote "$PGUSER_")
  password=$(yaml_quote "$PGPASSWORD_")
  # It holds the password: the user's alone (rm: a file that exists keeps
  # its mode when rewritten).
  mask=$(umask)
  umask 077
  rm -f "$RUN/temporal.yaml"
  cat >"$RUN/temporal.yaml" <<EOF
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 16
  datastores:
    # postgres12_pgx: the pgx driver keeps each statement prepared on its
    # connection; with lib/pq (postgres12) PostgreSQL parsed and planned
    # every one of a delivery's ~40 statements anew (BENCHMARKS.md).
    default:
      sql:
        pluginName: postgres12_pgx
        databaseName: $TEMPORAL_DB
        connectAddr: $addr
        connectProtocol: tcp
        user: $user
        password: $password
        maxConns: $TEMPORAL_MAXCONNS
        maxIdleConns: $TEMPORAL_MAXCONNS
        maxConnLifetime: 1h
    visibility:
      sql:
        pluginName: postgres12_pgx
        databaseName: $VISIBILITY_DB
        connectAddr: $addr
        connectProtocol: tcp
        user: $user
        password: $password
        maxConns: $VISIBILITY_MAXCONNS
        maxIdleConns: $VISIBILITY_MAXCONNS
        maxConnLifetime: 1h
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  pprof:
    port: $TEMPORAL_PPROF_PORT
services:
  frontend:
    rpc: {grpcPort: $TEMPORAL_PORT, membershipPort: $FRONTEND_MEMBERSHIP, httpPort: $FRONTEND_HTTP, bindOnLocalHost: true}
  history:
    rpc: {grpcPort: $HISTORY_GRPC, membershipPort: $HISTORY_MEMBERSHIP, bindOnLocalHost: true}
  matching:
    rpc: {grpcPort: $MATCHING_GRPC, membershipPort: $MATCHING_MEMBERSHIP, bindOnLocalHost: true}
  worker:
    rpc: {grpcPort: $WORKER_GRPC, membershipPort: $WORKER_MEMBERSHIP, bindOnLocalHost: true}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:$TEMPORAL_PORT
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: $ROOT/deploy/local/dynamicconfig.yaml
  pollInterval: 10s
EOF
  umask "$mask"
}

# databases creates the scratch databases and applies Temporal's schemas
# with its own tool.
databases() {
  local db
  for db in "$TEMPORAL_DB" "$VISIBILITY_DB" "$furrow_db"; do
    sql_tool --db "$db" create-database >>"$RUN/logs/schema.log" 2>&1 || die "cannot create database $db (see $RUN/logs/schema.log)"
  done
  sql_tool --db "$TEMPORAL_DB" setup-schema -v 0.0 >>"$RUN/logs/schema.log" 2>&1 &&
    sql_tool --db "$TEMPORAL_DB" update-schema --schema-name postgresql/v12/temporal >>"$RUN/logs/schema.log" 2>&1 &&
    sql_tool --db "$VISIBILITY_DB" setup-schema -v 0.0 >>"$RUN/logs/schema.log" 2>&1 &&
    sql_tool --db "$VISIBILITY_DB" update-schema --schema-name postgresql/v12/visibility >>"$RUN/logs/schema.log" 2>&1 ||
    die "applying the Temporal schemas failed (see $RUN/logs/schema.log)"
}

# launch NAME CMD... starts a process in its own session with its output in
# logs/NAME.log and its pid in NAME.pid.
launch() {
  local name=$1
  shift
  setsid "$@" >>"$RUN/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

# start_process NAME starts one named process of the topology.
start_process() {
  local name=$1 port log=$RUN/logs/$1.log from=0
  # shellcheck disable=SC1091
  source "$STATE"
  if running "$name"; then
    die "$name is already running"
  fi
  # The log goes on from earlier runs of NAME: readiness reads only past here.
  if [[ -f $log ]]; then from=$(wc -c <"$log"); fi
  case $name in
  redis)
    launch redis redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no
    ;;
  temporal)
    # A larger GC target: the server keeps caches of a few hundred MB, and
    # at the default of 100 it spent a fifth of its CPU collecting.
    launch temporal env GOGC="${CLUSTER_TEMPORAL_GOGC:-400}" "$TBIN/temporal-server" --config-file "$RUN/temporal.yaml" --allow-no-auth start
    ;;
  serve-* | worker-*)
    port=${name//-/_}_PORT
    port=${!port}
    local mport=${name//-/_}_METRICS_PORT
    mport=${!mport}
    (
      # shellcheck disable=SC1091
      source "$RUN/furrow.env"
      # shellcheck disable=SC2154 # furrow_url comes from the state file
      export FURROW_DATABASE_URL="$furrow_url&pool_max_conns=$furrow_pool" FURROW_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0" \
        FURROW_TEMPORAL_ADDRESS="127.0.0.1:$TEMPORAL_PORT" FURROW_HTTP_ADDR="127.0.0.1:$port"
      if [[ ${FURROW_METRICS_ADDR:-} != off ]]; then
        export FURROW_METRICS_ADDR="127.0.0.1:$mport"
      fi
      if [[ ${CLUSTER_PPROF:-} == 1 ]]; then
        local pport=${name//-/_}_PPROF_PORT
        export FURROW_PPROF_ADDR="127.0.0.1:${!pport}"
      fi
      launch "$name" "$RUN/bin/furrow" "${name%-*}"
    )
    ;;
  *) die "unknown process $name" ;;
  esac
  wait_ready "$name" "$from"
}

# wait_ready NAME [FROM] waits until the process answers, or fails showing
# its log; a worker answers with a line of its log past byte FROM. Each
# probe has a time limit: a port held by a program that accepts and never
# answers would otherwise stop the wait.
wait_ready() {
  local name=$1 from=${2:-0} i
  for i in $(seq 1 240); do
    running "$name" || break
    case $name in
    redis) timeout 2 redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && owns "$name" "$REDIS_PORT" && return ;;
    temporal) (exec 3<>"/dev/tcp/127.0.0.1/$TEMPORAL_PORT") 2>/dev/null && owns "$name" "$TEMPORAL_PORT" && return ;;
    serve-*)
      local port=${name//-/_}_PORT
      curl -fsS --max-time 2 "http://127.0.0.1:${!port}/readyz" >/dev/null 2>&1 && owns "$name" "${!port}" && return
      ;;
    # Not the pipe tail | grep -q: grep's early exit can fail tail (pipefail).
    worker-*) grep -q "worker started" < <(tail -c +"$((from + 1))" "$RUN/logs/$name.log" 2>/dev/null) && return ;;
    esac
    sleep 0.5
  done
  tail -n 30 "$RUN/logs/$name.log" >&2 || true
  die "$name did not become ready"
}

# owns NAME PORT says whether the process NAME started is the one listening
# on PORT, so that a port another program took after free_port chose it is
# not taken for NAME being ready (NAME then fails to bind and exits). Without
# ss (iproute2) it cannot tell, and says yes.
owns() {
  local pid
  command -v ss >/dev/null || return 0
  pid=$(cat "$RUN/$1.pid" 2>/dev/null) || return 1
  ss -Hltnp "sport = :$2" 2>/dev/null | grep -q "pid=$pid,"
}

# running NAME says whether the process NAME started is still alive.
running() {
  local pid
  pid=$(cat "$RUN/$1.pid" 2>/dev/null) || return 1
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null
}

# stop_process NAME [SIGNAL] signals the process (TERM by default) and, for
# TERM and INT, waits for its exit, killing it after a minute.
stop_process() {
  local name=$1 sig=${2:-TERM} pid i
  pid=$(cat "$RUN/$name.pid" 2>/dev/null) || return 0
  if running "$name"; then
    kill -s "$sig" "$pid" 2>/dev/null || true
    if [[ $sig == TERM || $sig == INT || $sig == KILL ]]; then
      for i in $(seq 1 120); do
        running "$name" || break
        sleep 0.5
      done
      if running "$name"; then
        say "$name did not stop within a minute; killing it"
        kill -s KILL "$pid" 2>/dev/null || true
      fi
    fi
  fi
  if [[ $sig == TERM || $sig == INT || $sig == KILL ]]; then
    rm -f "$RUN/$name.pid"
  fi
}

names() {
  # shellcheck disable=SC1091
  source "$STATE"
  local i
  echo redis temporal
  for i in $(seq 1 "$WORKERS"); do echo "worker-$i"; done
  for i in $(seq 1 "$SERVES"); do echo "serve-$i"; done
}

# print_addresses prints the "name: address" lines of the run.
print_addresses() {
  # shellcheck disable=SC1091
  source "$STATE"
  local i p
  for i in $(seq 1 "$SERVES"); do
    p=serve_${i}_PORT
    echo "serve-$i: http://127.0.0.1:${!p}"
  done
  for i in $(seq 1 "$WORKERS"); do
    p=worker_${i}_PORT
    echo "worker-$i: http://127.0.0.1:${!p}"
  done
  echo "temporal: 127.0.0.1:$TEMPORAL_PORT"
  echo "redis: redis://127.0.0.1:$REDIS_PORT/0"
  # Without its password: these lines are printed, kept in terminals and
  # logs. A client gives CLUSTER_PGPASSWORD as PGPASSWORD, which pgx reads.
  echo "database: $(pg_url "$furrow_db")"
  [[ -z $PGPASSWORD_ ]] || say "the database line holds no password: give CLUSTER_PGPASSWORD's as PGPASSWORD"
  if [[ ${CLUSTER_PPROF:-} == 1 ]]; then
    local name port
    echo "pprof temporal: 127.0.0.1:$TEMPORAL_PPROF_PORT"
    for name in $(names | grep -v 'redis\|temporal'); do
      port=${name//-/_}_PPROF_PORT
      echo "pprof $name: 127.0.0.1:${!port}"
    done
  fi
}

# write_state ID names the run's databases after ID and writes the state
# file and furrow.env (the FURROW_* variables of up's environment), the
# user's alone: they hold the database password. Call it in this shell: see
# alloc_ports.
write_state() {
  local id=$1 mask
  TEMPORAL_DB=cluster_${id}_temporal VISIBILITY_DB=cluster_${id}_visibility furrow_db=cluster_${id}_furrow
  SERVES=${CLUSTER_SERVES:-2} WORKERS=${CLUSTER_WORKERS:-2}
  mask=$(umask)
  umask 077
  rm -f "$STATE" "$RUN/furrow.env" # a file that exists keeps its mode
  {
    echo "TBIN=$(shq "$TBIN")"
    echo "TEMPORAL_DB=$TEMPORAL_DB VISIBILITY_DB=$VISIBILITY_DB furrow_db=$furrow_db"
    echo "furrow_url=$(shq "$(pg_url "$furrow_db" "$PGPASSWORD_")")"
    # Read by the end-to-end tests, which connect to it.
    echo "VISIBILITY_URL=$(shq "$(pg_url "$VISIBILITY_DB" "$PGPASSWORD_")")"
    echo "SERVES=$SERVES WORKERS=$WORKERS"
    alloc_ports "$SERVES" "$WORKERS"
  } >"$STATE"
  export -p | grep '^declare -x FURROW_' | sed 's/^declare -x /export /' >"$RUN/furrow.env" || true
  umask "$mask"
}

# temporal_setup registers the namespace and the search attributes and trims
# the visibility indexes. The password goes in PGPASSWORD, which pgx reads
# when the URL has none: a command line is readable by every user (ps).
temporal_setup() {
  PGPASSWORD=$PGPASSWORD_ "$RUN/bin/temporalsetup" -address "127.0.0.1:$TEMPORAL_PORT" -namespace "${FURROW_TEMPORAL_NAMESPACE:-default}" \
    -retention 720h -trim-visibility "$(pg_url "$VISIBILITY_DB")" >>"$RUN/logs/temporalsetup.log" 2>&1
}

up() {
  [[ -f $STATE ]] && die "already up (state in $RUN); run down first"
  check_budget "${CLUSTER_SERVES:-2}" "${CLUSTER_WORKERS:-2}"
  check_autovacuum
  mkdir -p "$RUN/logs"
  rm -f "$RUN"/logs/*.log
  temporal_bins
  furrow_bins
  local id i
  id=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
  write_state "$id"
  trap 'say "up failed; stopping what started"; down >&2' EXIT
  databases
  write_temporal_config
  say "migrating $furrow_db"
  # shellcheck disable=SC1091
  source "$STATE"
  FURROW_DATABASE_URL=$furrow_url "$RUN/bin/furrow" migrate >>"$RUN/logs/migrate.log" 2>&1 ||
    die "furrow migrate failed (see $RUN/logs/migrate.log)"
  for i in redis temporal; do
    say "starting $i"
    start_process "$i"
  done
  say "registering namespace ${FURROW_TEMPORAL_NAMESPACE:-default} (30-day retention) and the Furrow search attributes; trimming visibility indexes"
  temporal_setup ||
    die "Temporal setup failed (see $RUN/logs/temporalsetup.log)"
  for i in $(names | grep -v 'redis\|temporal'); do
    say "starting $i"
    start_process "$i"
  done
  trap - EXIT
  print_addresses
}

down() {
  if [[ ! -f $STATE ]]; then
    say "nothing to stop (no state in $RUN)"
    return 0
  fi
  local name
  for name in $(names | tac); do
    stop_process "$name" TERM
  done
  # shellcheck disable=SC1091
  source "$STATE"
  # A state file written by an older cluster.sh names Furrow's database
  # FURROW_DB.
  local db furrow_db=${furrow_db:-${FURROW_DB:-}}
  for db in "$furrow_db" "$TEMPORAL_DB" "$VISIBILITY_DB"; do
    [[ -n $db && -x $TBIN/temporal-sql-tool ]] && sql_tool --db "$db" drop-database --force >>"$RUN/logs/schema.log" 2>&1 || true
  done
  rm -f "$STATE" "$RUN/furrow.env"
  say "stopped"
}

status() {
  [[ -f $STATE ]] || die "not up"
  local name
  for name in $(names); do
    if running "$name"; then echo "$name: running (pid $(cat "$RUN/$name.pid"))"; else echo "$name: stopped"; fi
  done
}

# Sourced (by the tests of its functions), the script only defines them.
[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0

case ${1:-} in
build) temporal_bins ;;
up) up ;;
down) down ;;
status) status ;;
start)
  [[ -f $STATE ]] || die "not up"
  start_process "${2:?usage: cluster.sh start NAME}"
  ;;
stop)
  [[ -f $STATE ]] || die "not up"
  stop_process "${2:?usage: cluster.sh stop NAME [SIGNAL]}" "${3:-TERM}"
  ;;
*)
  echo "usage: $0 build|up|down|status|start NAME|stop NAME [SIGNAL]" >&2
  exit 2
  ;;
esac
