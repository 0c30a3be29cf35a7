#!/usr/bin/env bash
# cluster.sh N RATE [tsr-bench args...]: benchmark allreduce on an emulated cluster of N hosts
# (../shared/tools/netcluster.sh: network namespaces tsr0..tsrN-1, links shaped to RATE, e.g.
# 1gbit), in one run: Tessera's tsr-bench, then Open MPI's MPI_Allreduce and PyTorch's gloo
# (the peer benchmarks of ../shared/tools, same sizes and output format) when installed.
# The cluster is always torn down, even on failure or Ctrl-C. At the end, tsr-cluster-summary
# prints each run's median bus bandwidth over the repeats and its ratio to each peer.
#
# Environment: SIZES_MIB (default 4,16,64), REPEATS (default 1: each benchmark runs REPEATS
# times, interleaved), PEERS=0 to skip the peers, BENCH_TIMEOUT_S (default 480, per run),
# TSR_BUILD (default build), RANKS_PER_HOST (default 1; Tessera only, the peers run one per
# host), TSR_ENV (space-separated VAR=VALUE for Tessera's ranks, e.g.
# "TSR_CHUNK_BYTES=262144", or "UCX_TCP_SNDBUF=auto" for the kernel's autotuning instead of
# Tessera's 256 KiB: docs/configuration.md), ALGOS (space-separated tsr-bench --algo values, e.g.
# "ring marsit" or "ring spardl topk": one tsr-bench run each, interleaved within
# every repeat, so their ratios come from one cluster), ITERS and WARMUP (tsr-bench -n
# and -w, default 5 and 1), TSR_ENVS ('|'-separated settings, e.g. "TSR_WAIT=spin|TSR_WAIT=auto":
# one tsr-bench run per setting, each with TSR_ENV's too, interleaved within every repeat),
# TCP_STATS=1 (after each run, a "## tcp counters" line: retransmits, reordering, spurious
# retransmits, out-of-order queueing and retransmission timeouts on all hosts during it), TSR_BUILDS ('|'-separated
# build directories, e.g. "build|../base/build" to compare two commits: every Tessera run
# once per build, interleaved; labelled build=DIR), PEER_SNDBUFS ('|'-separated socket send
# buffer sizes in bytes for the peers, e.g. "|65536": each peer benchmark once per value,
# empty = the kernel's autotuning; Open MPI through btl_tcp_sndbuf, gloo, which has no option
# for it, through the LD_PRELOAD shim peers/sndbuf_preload.c; labelled sndbuf=BYTES, so the
# peers can be compared with Tessera under UCX_TCP_SNDBUF), HOST_SYSCTL (space-separated
# KEY=VALUE set in every host's namespace once the cluster is up, for all the runs alike, e.g.
# "net.ipv4.tcp_congestion_control=cubic": this machine's kernel defaults to bbr).
# Extra arguments go to every tsr-bench run (e.g. -c 1, --density 0.01 --teams 2: dense
# algorithms ignore the sparse options; --algo ring when ALGOS is not set).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 N RATE [tsr-bench args...]" >&2; exit 2; }
n=$1 rate=$2; shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${TSR_SHARED:-$root/../shared}
net=$shared/tools/netcluster.sh
build=${TSR_BUILD:-$root/build}
builds=${TSR_BUILDS:-}
sizes=${SIZES_MIB:-4,16,64}
repeats=${REPEATS:-1}
limit=${BENCH_TIMEOUT_S:-480}
algos=${ALGOS:-}
# The script's own TSR_* settings are not Tessera's: the ranks would warn about them.
tsr_env=${TSR_ENV:-}
variants=${TSR_ENVS:-}
peer_sndbufs=${PEER_SNDBUFS:-}
unset TSR_BUILD TSR_BUILDS TSR_SHARED TSR_ENV TSR_ENVS
for a in "$@"; do
  [ -z "$algos" ] || [ "$a" != --algo ] || { echo "cluster.sh: give the algorithms in ALGOS or as --algo, not both" >&2; exit 2; }
done
[ -x "$net" ] || { echo "cluster.sh: $net not found (set TSR_SHARED)" >&2; exit 2; }
IFS='|' read -r -a build_list <<<"${builds:-$build}"
for b in "${build_list[@]}"; do
  [ -x "$b/bin/tsr-bench" ] || { echo "cluster.sh: $b/bin/tsr-bench not built" >&2; exit 2; }
done

# RATE in tc syntax -> Gbit/s for the floor column.
gbit=$(awk -v r="$rate" 'BEGIN { n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u);
  f = u == "gbit" ? 1 : u == "mbit" ? 1e-3 : u == "kbit" ? 1e-6 : u == "bit" ? 1e-9 : -1;
  if (f < 0) exit 1; printf "%g", n * f }') || { echo "cluster.sh: bad RATE '$rate' (use 1gbit, 100mbit, ...)" >&2; exit 2; }
min=$(echo "$sizes" | tr ',' '\n' | sort -n | head -1) max=$(echo "$sizes" | tr ',' '\n' | sort -n | tail -1)
factor=$(echo "$sizes" | awk -F, '{ if (NF > 1) print $2 / $1; else print 2 }')

IFS='|' read -r -a sndbuf_list <<<"${peer_sndbufs:- }"
for v in "${sndbuf_list[@]}"; do
  v=$(echo $v)
  [ -z "$v" ] || [[ $v =~ ^[0-9]+$ && $v -ge 4096 ]] || { echo "cluster.sh: PEER_SNDBUFS: '$v' is not a size in bytes >= 4096" >&2; exit 2; }
done

hostfile=$(mktemp /tmp/tsr-cluster-hosts.XXXXXX)
log=$(mktemp /tmp/tsr-cluster-log.XXXXXX)
shim_dir=$(mktemp -d /tmp/tsr-cluster-shim.XXXXXX)
cleanup() { "$net" down >/dev/null 2>&1 || true; rm -rf "$hostfile" "$log" "$shim_dir"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < n; i++)); do echo "tsr$i slots=${RANKS_PER_HOST:-1}"; done >"$hostfile"
"$net" up "$n" "$rate" >/dev/null
for kv in ${HOST_SYSCTL:-}; do
  [[ $kv =~ ^([a-z0-9_.]+)=(.+)$ ]] || { echo "cluster.sh: HOST_SYSCTL: '$kv' is not KEY=VALUE" >&2; exit 2; }
  for ((i = 0; i < n; i++)); do
    ip netns exec "tsr$i" sysctl -qw "$kv" && [ "$(ip netns exec "tsr$i" sysctl -n "${BASH_REMATCH[1]}")" = "${BASH_REMATCH[2]}" ] ||
      { echo "cluster.sh: HOST_SYSCTL: cannot set '$kv' on tsr$i" >&2; exit 2; }
  done
  echo "## host setting, read back on tsr0..tsr$((n - 1)): $kv"
done

run_tessera() {  # [tsr-bench args...]; $variant: this run's settings (TSR_ENVS); $bin: its build
  local label="${builds:+build=$bin${variant:+ }}$variant"
  echo "## Tessera tsr-bench $*, $n hosts x ${RANKS_PER_HOST:-1} ranks, $rate${label:+, $label}"
  # Only TCP across hosts: UCX's shared memory would bypass the shaped links.
  local extra=()
  for kv in $tsr_env $variant; do extra+=(-x "$kv"); done
  timeout "$limit" "$bin/bin/tsrun" --hostfile "$hostfile" --rsh "$net rsh" \
    -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=net0 "${extra[@]}" \
    "$bin/bin/tsr-bench" -b "${min}M" -e "${max}M" -f "$factor" -n "${ITERS:-5}" -w "${WARMUP:-1}" -F peer --rate "$gbit" "$@"
}
# The peers: $sndbuf = this run's socket send buffer in bytes (PEER_SNDBUFS), empty = autotuned.
run_mpi() {
  command -v mpirun >/dev/null || { echo "## Open MPI: not installed (apt-get install openmpi-bin libopenmpi-dev)"; return 0; }
  echo "## Open MPI MPI_Allreduce (default algorithm), N=$n, $rate${sndbuf:+, sndbuf=$sndbuf}"
  MPI_EXTRA="${MPI_EXTRA:-}${sndbuf:+ --mca btl_tcp_sndbuf $sndbuf}" BENCH_TIMEOUT_S=$limit \
    "$shared/tools/run_mpi.sh" net "$n" "$gbit" "$sizes" 1 || echo "## Open MPI failed ($?)"
}
run_gloo() {
  /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || { echo "## gloo: python3-torch not installed"; return 0; }
  echo "## PyTorch gloo, N=$n, $rate${sndbuf:+, sndbuf=$sndbuf}"
  local pre=()
  if [ -n "$sndbuf" ]; then
    [ -e "$shim_dir/sndbuf.so" ] || cc -shared -fPIC -O2 -o "$shim_dir/sndbuf.so" "$root/tools/bench/peers/sndbuf_preload.c" -ldl ||
      { echo "## gloo failed (cannot build the sndbuf shim)"; return 0; }
    pre=(env LD_PRELOAD="$shim_dir/sndbuf.so" PRELOAD_SNDBUF_BYTES="$sndbuf")
  fi
  BENCH_TIMEOUT_S=$limit "${pre[@]}" "$shared/tools/run_gloo.sh" net "$n" --rate-gbit "$gbit" --sizes-mib "$sizes" || echo "## gloo failed ($?)"
}

# The TCP counters that show loss and reordering, summed over the hosts (each namespace has its
# own /proc/net): "OutSegs RetransSegs TCPSACKReorder TCPDSACKRecv TCPOFOQueue TCPTimeouts"
# (TCPTimeouts: retransmission timeouts, each a stall of at least 200 ms).
tcp_counters() {
  for ((i = 0; i < n; i++)); do "$net" exec "$i" cat /proc/net/snmp /proc/net/netstat; done | awk '
    /^(Tcp|TcpExt):/ { if (!($1 in names)) { names[$1] = $0; next }
                       split(names[$1], k); for (j = 2; j <= NF; j++) sum[k[j]] += $j; delete names[$1] }
    END { print sum["OutSegs"] + 0, sum["RetransSegs"] + 0, sum["TCPSACKReorder"] + 0,
                sum["TCPDSACKRecv"] + 0, sum["TCPOFOQueue"] + 0, sum["TCPTimeouts"] + 0 }'
}
# Runs "$@"; with TCP_STATS=1, then prints how much the counters grew during it.
with_tcp_stats() {
  [ "${TCP_STATS:-0}" = 1 ] || { "$@"; return; }
  local before after rc=0
  read -r -a before <<<"$(tcp_counters)"
  "$@" || rc=$?
  read -r -a after <<<"$(tcp_counters)"
  local names=(OutSegs RetransSegs TCPSACKReorder TCPDSACKRecv TCPOFOQueue TCPTimeouts) line="" k
  for k in 0 1 2 3 4 5; do line+=" ${names[k]}=$((${after[k]:-0} - ${before[k]:-0}))"; done
  echo "## tcp counters, all hosts, that run:$line"
  return $rc
}

sweep() {
status=0
for ((r = 1; r <= repeats; r++)); do
  IFS='|' read -r -a settings <<<"${variants:- }"
  for bin in "${build_list[@]}"; do
  for variant in "${settings[@]}"; do
    variant=$(echo $variant)  # trimmed
    if [ -z "$algos" ]; then
      with_tcp_stats run_tessera "$@" || status=$?
    else
      for a in $algos; do with_tcp_stats run_tessera --algo "$a" "$@" || status=$?; done
    fi
  done
  done
  if [ "${PEERS:-1}" != 0 ]; then
    for sndbuf in "${sndbuf_list[@]}"; do
      sndbuf=$(echo $sndbuf)
      with_tcp_stats run_mpi; with_tcp_stats run_gloo
    done
  fi
done
return $status
}

# Everything goes to the terminal and to a log, which the summary then reads (medians over
# the repeats, ratios to the peers repeat by repeat: tsr-cluster-summary).
set +e
sweep "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
[ ! -x "$build/bin/tsr-cluster-summary" ] || "$build/bin/tsr-cluster-summary" "$log"
exit $status
