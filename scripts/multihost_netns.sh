#!/usr/bin/env bash
# Multi-host check of the MPI transport on ONE machine: every "host" is a network namespace
# (with its own UTS namespace, i.e. hostname) on a bridge in the root namespace, and one mpirun
# job spans them through a launch agent that stands in for ssh. Ranks in one namespace are one
# node (shared memory), ranks in different namespaces talk over TCP through MPI.
#
# Usage: sudo scripts/multihost_netns.sh [options] [BUILD_DIR]
#   BUILD_DIR            a build with ONESIDE_WITH_MPI=ON (binaries in BUILD_DIR/bin); default:
#                        build/release, else the newest build/*/ whose stencil links libmpi
#   --hosts N            namespaces ("hosts"), default 2
#   --ranks-per-host N   ranks in each namespace, default 2
#   --timeout S          time limit of the probe and each stencil run, default 120
#   --atomicity-timeout S  time limit of test_rma_atomicity, default 600
#   --same-hostname      do not give each namespace its own hostname (see "Why UTS" below)
#   --logs DIR           keep every step's output in DIR (default: a new /tmp/oneside-netns-logs.*)
#   --skip-probe         skip the plain-MPI probe (needs mpicxx)
#   --mpirun-arg ARG     one more argument for every mpirun (repeat: --mpirun-arg --mca ...)
#   --steps LIST         comma-separated subset of probe,fence,pscw,passive,atomicity (default all)
#
# Why UTS: Open MPI 4.1 names its session directory /tmp/ompi.<hostname>.<uid>/jf.<job>/ and puts
# the hwloc topology file there; two orteds with one hostname and one /tmp race on it (seen here:
# "mkdir ... File exists" in orte_session_dir, a segfault in hwloc_shmem_topology_write, a hang:
# 3 bad launches in 30). A hostname per namespace removes the race (0 in 45). MPI's node split
# (MPI_COMM_TYPE_SHARED) is per orted either way, not per hostname.
#
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN for the namespaces), iproute2, unshare, Open MPI's mpirun.
# Everything created is removed on exit, also after a failure or ^C; leftovers of an interrupted
# run are removed at the start.
set -euo pipefail

# ---- settings -------------------------------------------------------------------------------
NS_PREFIX=oneside-h        # namespaces oneside-h1, oneside-h2, ...
VETH_PREFIX=oneside-v      # root-side veth ends oneside-v1, ...; the namespace end is eth0
BRIDGE=oneside-br0
SUBNET=10.77.0             # /24; the bridge is .1, host i is .(10+i)
LOCK=/run/lock/oneside-netns.lock

hosts=2
ranks_per_host=2
step_timeout=120
atomicity_timeout=600
own_hostname=1
log_dir=""
probe=1
extra_args=()
steps=probe,fence,pscw,passive,atomicity
build=""

die() { echo "multihost_netns: $*" >&2; exit 2; }
usage() { sed -n '7,28p' "$0" | sed 's/^# \{0,1\}//'; }

while (($#)); do
  case $1 in
    --hosts) hosts=${2:?}; shift 2 ;;
    --ranks-per-host) ranks_per_host=${2:?}; shift 2 ;;
    --timeout) step_timeout=${2:?}; shift 2 ;;
    --atomicity-timeout) atomicity_timeout=${2:?}; shift 2 ;;
    --same-hostname) own_hostname=0; shift ;;
    --logs) log_dir=${2:?}; shift 2 ;;
    --skip-probe) probe=0; shift ;;
    --mpirun-arg) extra_args+=("${2:?}"); shift 2 ;;
    --steps) steps=${2:?}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [[ -z $build ]] || die "one build dir only"; build=$1; shift ;;
  esac
done
if ! [[ $hosts =~ ^[0-9]+$ ]] || ((hosts < 2 || hosts > 200)); then die "--hosts must be 2..200"; fi
if ! [[ $ranks_per_host =~ ^[0-9]+$ ]] || ((ranks_per_host < 1)); then
  die "--ranks-per-host must be >= 1"
fi
np=$((hosts * ranks_per_host))
for s in ${steps//,/ }; do
  [[ $s =~ ^(probe|fence|pscw|passive|atomicity)$ ]] || die "unknown step '$s' in --steps"
done

# ---- prerequisites --------------------------------------------------------------------------
((EUID == 0)) || die "needs root (network namespaces need CAP_NET_ADMIN); run with sudo"
command -v ip >/dev/null || die "needs 'ip' from iproute2 (apt-get install iproute2)"
ip netns list >/dev/null 2>&1 || die "'ip netns' does not work here (no netns support?)"
command -v unshare >/dev/null || die "needs 'unshare' (util-linux)"
command -v mpirun >/dev/null || die "needs mpirun (Open MPI) in PATH"
# (Pipes into grep -q are avoided: with pipefail, the writer's SIGPIPE would fail the test.)
[[ $(mpirun --version 2>&1) == *"Open MPI"* ]] || die "mpirun is not Open MPI (the flags below are Open MPI's)"
command -v timeout >/dev/null || die "needs timeout (coreutils)"

top=$(cd "$(dirname "$0")/.." && pwd)
links_mpi() { [[ $(ldd "$1/bin/stencil" 2>/dev/null) == *libmpi.so* ]]; }
if [[ -z $build ]]; then
  if [[ -x $top/build/release/bin/stencil ]]; then
    build=$top/build/release
  else
    # The newest build that has both binaries and was built with the MPI transport.
    for d in "$top"/build/*; do
      if [[ -x $d/bin/stencil && -x $d/bin/test_rma_atomicity ]] && links_mpi "$d" &&
         { [[ -z $build ]] || [[ $d/bin/stencil -nt $build/bin/stencil ]]; }; then
        build=$d
      fi
    done
  fi
  [[ -n $build ]] || die "no build dir given and none found under $top/build (configure one with MPI)"
fi
build=$(cd "$build" && pwd) || die "no such build dir"
for b in stencil test_rma_atomicity; do
  [[ -x $build/bin/$b ]] || die "$build/bin/$b is missing (cmake --build $build --target stencil test_rma_atomicity)"
done
links_mpi "$build" || die "$build/bin/stencil does not link libmpi: configure with ONESIDE_WITH_MPI=ON"

# One run at a time: the cleanup below removes namespaces by name.
mkdir -p "$(dirname "$LOCK")"
exec 9>"$LOCK"
flock -n 9 || die "another multihost_netns.sh is running (lock $LOCK)"

work=$(mktemp -d /tmp/oneside-netns.XXXXXX)
[[ -n $log_dir ]] || log_dir=$(mktemp -d /tmp/oneside-netns-logs.XXXXXX)
mkdir -p "$log_dir"

ns_of() { echo "$NS_PREFIX$1"; }
ip_of() { echo "$SUBNET.$((10 + $1))"; }

# ---- setup and teardown ---------------------------------------------------------------------
# Removes our namespaces, veths and bridge, whoever made them (this run or an interrupted one).
teardown_net() {
  local ns l
  local -a pids
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NS_PREFIX}[0-9]+$" || true); do
    # Processes left in a namespace (an orted after a timeout, a hung rank) keep it alive after
    # 'ip netns del'; they were started by this script (or an earlier run of it), end them by id.
    mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null || true)
    if ((${#pids[@]})); then
      kill -TERM "${pids[@]}" 2>/dev/null || true
      sleep 1
      mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null || true)
      ((${#pids[@]} == 0)) || kill -KILL "${pids[@]}" 2>/dev/null || true
    fi
  done
  # Deleting the root end of a veth deletes both ends at once (namespace teardown is asynchronous).
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
               grep -E "^${VETH_PREFIX}[0-9]+$" || true); do
    ip link del "$l" 2>/dev/null || true
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NS_PREFIX}[0-9]+$" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
}

cleanup() {
  local rc=$? i
  trap - EXIT INT TERM
  if [[ -n ${mpi_child:-} ]] && kill -TERM "$mpi_child" 2>/dev/null; then
    echo "multihost_netns: interrupted, stopping mpirun (pid $mpi_child)" >&2
    for ((i = 0; i < 15; i++)); do kill -0 "$mpi_child" 2>/dev/null || break; sleep 1; done
    kill -KILL "$mpi_child" 2>/dev/null || true
  fi
  teardown_net
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

setup_net() {
  ip link add "$BRIDGE" type bridge
  ip addr add "$SUBNET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i ns
  for ((i = 1; i <= hosts; i++)); do
    ns=$(ns_of $i)
    ip netns add "$ns"
    # Named eth0 inside, like a host's NIC; UCX and Open MPI then see exactly lo + eth0.
    ip link add "$VETH_PREFIX$i" type veth peer name eth0 netns "$ns"
    ip link set "$VETH_PREFIX$i" master "$BRIDGE" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "$(ip_of $i)/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    # mpirun (in the root namespace) is reached through the bridge address anyway; a default
    # route only matters if something resolves to an address outside the subnet.
    ip netns exec "$ns" ip route add default via "$SUBNET.1"
  done
}

# The launch agent: Open MPI calls "<agent> <host> <command...>" where it would call ssh. The
# command is a shell command line (like ssh's), so it is run with sh -c, inside the namespace
# owning the host address and, unless --same-hostname, in a new UTS namespace named after it.
write_agent() {
  local i
  {
    cat <<'AGENT'
#!/usr/bin/env bash
host=$1; shift
case $host in
AGENT
    for ((i = 1; i <= hosts; i++)); do printf '  %s) ns=%s ;;\n' "$(ip_of $i)" "$(ns_of $i)"; done
    cat <<'AGENT'
  *) echo "oneside netns agent: unknown host $host" >&2; exit 255 ;;
esac
AGENT
    if ((own_hostname)); then
      # sh -c 'hostname "$0" && exec sh -c "$1"' NAME COMMAND: set the hostname, then run.
      cat <<'AGENT'
exec ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$1"' "$ns" "$*"
AGENT
    else
      cat <<'AGENT'
exec ip netns exec "$ns" /bin/sh -c "$*"
AGENT
    fi
  } >"$work/agent"
  chmod +x "$work/agent"
}

# ---- the mpirun command line ----------------------------------------------------------------
host_list=""
for ((i = 1; i <= hosts; i++)); do host_list+="${host_list:+,}$(ip_of $i):$ranks_per_host"; done

# shellcheck disable=SC2054  # the commas are Open MPI's, not array separators
mpirun_args=(
  --host "$host_list" -np "$np"
  # Both "hosts" have all the machine's cores; without this each orted would bind its ranks
  # to the same first cores. --oversubscribe: the slots may exceed the cores.
  --oversubscribe --bind-to none
  # ssh replacement; no tree spawn: only mpirun calls the agent (an orted launching further
  # orteds is not needed with a handful of hosts and is one more thing to go wrong).
  --mca plm_rsh_agent "$work/agent"
  --mca plm_rsh_no_tree_spawn 1
  # Out-of-band (orted <-> mpirun) and MPI point-to-point only on the bridge subnet; otherwise
  # the ranks also advertise the root namespace's other addresses.
  --mca oob_tcp_if_include "$SUBNET.0/24"
  --mca btl_tcp_if_include "$SUBNET.0/24"
  # Point-to-point over TCP (no shared-memory btl: it would have to span two "nodes" on one
  # /dev/shm), one-sided through UCX over TCP: the path the MPI transport is known to work on
  # with Debian's Open MPI 4.1.4, whose openmpi-mca-params.conf has osc = ^ucx,pt2pt, so osc
  # ucx must be named.
  --mca btl self,tcp
  --mca osc ucx
  -x UCX_TLS=tcp,self
  # The orteds inherit the agent's environment here, but on real hosts these must be passed.
  -x PATH
)
[[ -z ${LD_LIBRARY_PATH:-} ]] || mpirun_args+=(-x LD_LIBRARY_PATH)
for v in $(compgen -e | grep '^ONESIDE_' || true); do mpirun_args+=(-x "$v"); done
mpirun_args+=("${extra_args[@]}")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # mpirun refuses root otherwise

# run_mpi LOG SECONDS PROGRAM ARGS...: mpirun's own --timeout aborts the job (with a message);
# the outer timeout is for an mpirun that does not come back after that.
# It runs in the background and is waited for, so that ^C / kill reach the traps at once (bash
# runs a trap only after a foreground child ends); cleanup then ends it (timeout passes the
# signal to mpirun, which takes down its orteds and ranks).
mpi_child=""
run_mpi() {
  local log=$1 secs=$2 rc=0
  shift 2
  (cd "$work" && exec timeout -k 10 $((secs + 30)) mpirun --timeout "$secs" "${mpirun_args[@]}" "$@") \
    </dev/null >"$log" 2>&1 &
  mpi_child=$!
  wait "$mpi_child" || rc=$?
  mpi_child=""
  return "$rc"
}

# ---- steps ----------------------------------------------------------------------------------
declare -a summary=()
failed=0
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# record NAME STATUS SECONDS DETAIL
record() {
  local line
  line=$(printf '%-4s %-26s %6ss  %s' "$2" "$1" "$3" "$4")
  echo "$line"
  summary+=("$line")
  [[ $2 != FAIL ]] || failed=1
}
show_failure() {  # the end of a failed step's output
  echo "---- last lines of $1:"
  tail -n 40 "$1" | sed 's/^/    /'
  echo "----"
}
# mpirun --timeout exits with its own code and message; timeout(1) with 124 (137 after -k).
timed_out() { (($1 == 124 || $1 == 137)) || grep -q 'time limit for job execution has been reached' "$2"; }
count_ucx_noise() { grep -c 'UCX  \(ERROR\|WARN\)' "$1" || true; }

probe_src() {
  cat <<'EOF'
// Per rank: namespace address, hostname, MPI's node (MPI_COMM_TYPE_SHARED) and a one-sided check.
#include <mpi.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_size = 0, node_rank = 0, node_leader = rank;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_rank(node, &node_rank);
  MPI_Bcast(&node_leader, 1, MPI_INT, 0, node);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  char addr[INET_ADDRSTRLEN] = "?";
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i; i = i->ifa_next)
      if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && std::strcmp(i->ifa_name, "lo") != 0)
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, addr, sizeof addr);
    freeifaddrs(ifs);
  }
  // One-sided across the "hosts": each rank puts its rank to the next one (fence), then every
  // rank adds 1 at rank 0 (passive target, fetch-and-op).
  long* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  base[0] = -1; base[1] = 0;
  MPI_Win_fence(0, win);
  long mine = rank;
  MPI_Put(&mine, 1, MPI_LONG, (rank + 1) % size, 0, 1, MPI_LONG, win);
  MPI_Win_fence(0, win);
  bool ok = base[0] == (rank + size - 1) % size;
  long one = 1, old = 0;
  MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
  MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 1, MPI_SUM, win);
  MPI_Win_unlock(0, win);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    ok = ok && base[1] == size;
    MPI_Win_unlock(0, win);
  }
  int all_ok = 0, my_ok = ok ? 1 : 0;
  MPI_Allreduce(&my_ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  std::printf("probe rank %d/%d addr=%s hostname=%s node_size=%d node_rank=%d node_leader=%d "
              "thread_multiple=%d\n",
              rank, size, addr, host, node_size, node_rank, node_leader,
              provided == MPI_THREAD_MULTIPLE ? 1 : 0);
  std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("probe one-sided (put+fence, fetch_and_op+lock): %s\n", all_ok ? "ok" : "WRONG");
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
EOF
}

step_probe() {
  local name="mpi probe (node split)" log=$log_dir/probe.log t0
  if ((!probe)); then record "$name" SKIP 0 "--skip-probe"; return; fi
  if ! command -v mpicxx >/dev/null; then record "$name" SKIP 0 "no mpicxx"; return; fi
  probe_src >"$work/probe.cpp"
  if ! mpicxx -O1 -o "$work/probe" "$work/probe.cpp" >"$log_dir/probe-build.log" 2>&1; then
    record "$name" FAIL 0 "mpicxx failed, see $log_dir/probe-build.log"; return
  fi
  t0=$(now)
  local rc=0
  run_mpi "$log" "$step_timeout" "$work/probe" || rc=$?
  local secs; secs=$(elapsed "$t0")
  { grep '^probe rank' "$log" | sort -k3,3n; grep '^probe one-sided' "$log"; } | sed 's/^/    /' || true
  # Each namespace must be one node of ranks_per_host ranks: the leaders are the first rank of
  # each namespace, and every rank in a namespace shares the namespace's address and leader.
  local lines splits
  lines=$(grep -c '^probe rank' "$log" || true)
  splits=$(grep '^probe rank' "$log" | sed -E 's/.*addr=([^ ]+).*node_size=([0-9]+).*node_leader=([0-9]+).*/\1 \2 \3/' |
             sort -u | wc -l)
  local bad_size
  bad_size=$(grep '^probe rank' "$log" | grep -vc "node_size=$ranks_per_host " || true)
  if ((rc == 0)) && ((lines == np)) && ((splits == hosts)) && ((bad_size == 0)) &&
     grep -q 'one-sided.*: ok' "$log"; then
    record "$name" PASS "$secs" "$hosts nodes x $ranks_per_host ranks, one-sided ok"
  else
    local why="rc=$rc"
    timed_out "$rc" "$log" && why+=" (time limit)"
    record "$name" FAIL "$secs" "$why, ranks=$lines, node groups=$splits (want $hosts of $ranks_per_host)"
    show_failure "$log"
  fi
}

step_stencil() {
  local variant=$1 name="stencil --variant $1" log=$log_dir/stencil-$1.log t0 rc=0
  t0=$(now)
  run_mpi "$log" "$step_timeout" "$build/bin/stencil" --n 200 --iterations 10 --variant "$variant" || rc=$?
  local secs; secs=$(elapsed "$t0")
  local rate noise
  rate=$(grep -m1 '^Rate' "$log" || true)
  noise=$(count_ucx_noise "$log")
  if ((rc == 0)) && grep -q '^Solution validates' "$log" &&
     grep -Eq "^Number of ranks += $np\$" "$log"; then
    local detail="Solution validates; $rate"
    # UCX 1.13 often logs "error during flush: Endpoint timeout" / "disconnect failed" at
    # MPI_Finalize over TCP (a plain MPI program does too); counted, not a failure.
    ((noise == 0)) || detail+="; $noise UCX ERROR/WARN lines at exit"
    record "$name" PASS "$secs" "$detail"
  else
    local why="rc=$rc"
    timed_out "$rc" "$log" && why+=" (time limit)"
    grep -q '^Solution validates' "$log" || why+=", no 'Solution validates'"
    if grep -q '^Number of ranks' "$log" && ! grep -Eq "^Number of ranks += $np\$" "$log"; then
      why+=", not $np ranks (a build without the MPI transport?)"
    fi
    record "$name" FAIL "$secs" "$why"
    show_failure "$log"
  fi
}

step_atomicity() {
  local name="test_rma_atomicity" log=$log_dir/atomicity.log t0 rc=0
  t0=$(now)
  run_mpi "$log" "$atomicity_timeout" "$build/bin/test_rma_atomicity" --gtest_color=no || rc=$?
  local secs; secs=$(elapsed "$t0")
  local passed failed_tests
  passed=$(grep -m1 '^\[  PASSED  \]' "$log" || true)
  failed_tests=$(grep -c '^\[  FAILED  \] .*\.' "$log" || true)
  if ((rc == 0)) && [[ -n $passed ]]; then
    record "$name" PASS "$secs" "$passed"
  else
    local why="rc=$rc"
    timed_out "$rc" "$log" && why+=" (time limit)"
    record "$name" FAIL "$secs" "$why, $failed_tests failed test lines"
    grep '^\[  FAILED  \]' "$log" | sed 's/^/    /' || true
    show_failure "$log"
  fi
}

# ---- run ------------------------------------------------------------------------------------
cat <<EOF
oneside multi-host check on one machine (network namespaces)
  hosts:   $hosts namespaces ${NS_PREFIX}1..${NS_PREFIX}$hosts at $(ip_of 1)..$(ip_of "$hosts") on bridge $BRIDGE ($SUBNET.1/24)
           hostname per namespace: $( ((own_hostname)) && echo yes || echo "no (--same-hostname)")
  job:     $np ranks ($ranks_per_host per host), one mpirun from the root namespace, ssh replaced by
           an agent running 'ip netns exec <ns>'
  build:   $build
  steps:   MPI probe (node split + one-sided), stencil fence/pscw/passive (--n 200 --iterations 10),
           test_rma_atomicity; time limit ${step_timeout}s per step, ${atomicity_timeout}s for atomicity
  logs:    $log_dir
EOF

teardown_net  # leftovers of an interrupted run
setup_net
write_agent
echo "  mpirun  ${mpirun_args[*]} <program>"
echo

t_all=$(now)
for s in ${steps//,/ }; do
  case $s in
    probe) step_probe ;;
    fence | pscw | passive) step_stencil "$s" ;;
    atomicity) step_atomicity ;;
  esac
done

echo
echo "summary ($(elapsed "$t_all")s, logs in $log_dir):"
printf '  %s\n' "${summary[@]}"
if ((failed)); then
  echo "multihost_netns: FAILED"
  exit 1
fi
echo "multihost_netns: all steps passed"
