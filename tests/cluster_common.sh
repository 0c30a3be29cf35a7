# Sourced by the tests/cluster_*_check.sh scripts: the emulated cluster they run a job on, and
# the teardown that leaves nothing behind on any exit or signal.
#   cluster_up NAME HOSTS RATE [SLOTS]
# makes a work folder (work=/tmp/tsr-NAME.XXXXXX, with log=$work/log and hostfile=$work/hosts,
# HOSTS lines "tsrI slots=SLOTS") and the cluster (net=netcluster.sh up HOSTS RATE); exits 77
# (skipped) where network namespaces cannot be made, 1 when the cluster cannot. Start the job
# in a session of its own (setsid ... &) and set child=$!: the teardown kills that whole
# session, then takes the cluster down and removes the work folder.
cluster_up() {
  local name=$1 hosts=$2 rate=$3 slots=${4:-1} here i
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
    echo "skipped: needs root and ip netns"
    exit 77
  fi
  net=${TSR_SHARED:-$here/../../shared}/tools/netcluster.sh
  [ -x "$net" ] || { echo "FAIL: $net not found (set TSR_SHARED)"; exit 1; }
  work=$(mktemp -d "/tmp/tsr-$name.XXXXXX")
  log=$work/log hostfile=$work/hosts child=
  trap cluster_teardown EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM HUP
  for ((i = 0; i < hosts; i++)); do echo "tsr$i slots=$slots"; done >"$hostfile"
  "$net" up "$hosts" "$rate" >/dev/null || { echo "FAIL: netcluster.sh up $hosts $rate"; exit 1; }
}

cluster_teardown() {
  if [ -n "${child:-}" ]; then
    pkill -KILL -s "$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  "$net" down >/dev/null 2>&1 || true
  rm -rf "$work"
}
