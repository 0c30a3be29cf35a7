#!/usr/bin/env bash
# shm_collectives.sh [N] [ROUNDS] [SIZES]: reduce_scatter, allgather and broadcast on this host,
# Tessera (tsr-bench) against Open MPI (shared memory, vader; peers/mpi_collectives.c) in one
# run, interleaved ROUNDS times (default 3), f32, sizes in bytes as nccl-tests count them
# (default 4 / 16 / 64 MiB). Same method for both: barrier, one call, slowest rank, median over
# 10 iterations. Prints every round's times and, per op and size, the median of the per-round
# ratios (Open MPI's time / Tessera's: above 1, Tessera is faster). PLANS=1 also runs Tessera
# with TSR_ALGO=ring (the message plans: ring reduce-scatter and all-gather, binomial
# broadcast) and prints the plan's time / the default's; BASE_BUILD=DIR also runs that build's
# tsr-bench (say, a worktree of an earlier commit) and prints its time / this build's. ITERS
# (default 10) sets the iterations per run; OPS (default all three) the collectives.
set -euo pipefail
n=${1:-4} rounds=${2:-3} sizes=${3:-4194304,16777216,67108864}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${TSR_BUILD:-$root/build}
work=$(mktemp -d /tmp/tsr-shm-coll.XXXXXX)
trap 'rm -rf "$work"' EXIT
command -v mpicc >/dev/null || { echo "shm_collectives.sh: mpicc not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 2; }
mpicc -O2 -o "$work/mpi_collectives" "$root/tools/bench/peers/mpi_collectives.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
IFS=, read -r -a list <<<"$sizes"
IFS=, read -r -a ops <<<"${OPS:-reduce_scatter,allgather,broadcast}"
iters=${ITERS:-10}
for ((r = 1; r <= rounds; r++)); do
  for op in "${ops[@]}"; do
    for s in "${list[@]}"; do
      # Tessera: one size per run, as the peer runs them, so a run's slow mode hits both alike.
      tessera() {  # [BUILD] [tsrun options]
        local b=$build
        [ -d "${1:-}" ] && { b=$1; shift; }
        timeout 300 "$b/bin/tsrun" -np "$n" "$@" "$b/bin/tsr-bench" --op "$op" -b "$s" -e "$s" -n "$iters" -w 1 -c 1 |
          awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ { if ($11 != 0) { print "wrong -"; exit } print $7, $6 }'
      }
      t=$(tessera)
      m=$(timeout 300 mpirun -np "$n" --bind-to none --oversubscribe --mca pml ob1 --mca btl vader,self \
        --mca mpi_yield_when_idle 1 "$work/mpi_collectives" "$op" "$s" "$iters" | awk '$1 == "'"$op"'" { print $3, $5 }')
      p="" q=""
      [ "${PLANS:-0}" = 1 ] && p="plans $(tessera -x TSR_ALGO=ring)"
      [ -n "${BASE_BUILD:-}" ] && q="base $(tessera "$BASE_BUILD")"
      echo "round $r $op $s tessera ${t:-none -} openmpi ${m:-none -} $p $q" | tee -a "$work/rows"
    done
  done
done
python3 - "$work/rows" <<'PY'
import statistics, sys
tables = {"openmpi": {}, "plans": {}, "base": {}}
for line in open(sys.argv[1]):
    f = line.split()  # round R op size tessera T ALGO openmpi T OK [plans T ALGO] [base T ALGO]
    runs = {f[i]: (f[i + 1], f[i + 2]) for i in range(4, len(f) - 2, 3)}
    if runs["tessera"][0] in ("wrong", "none"):
        print("not compared:", line.strip()); continue
    mine = float(runs["tessera"][0])
    for name, table in tables.items():
        t, tag = runs.get(name, ("none", "-"))
        if t in ("wrong", "none") or tag == "wrong" or (name == "openmpi" and tag != "OK"):
            if name in runs: print(f"{name} not compared:", line.strip())
            continue
        table.setdefault((f[2], int(f[3])), []).append(float(t) / mine)
titles = {"openmpi": "Open MPI time / Tessera time", "plans": "TSR_ALGO=ring time / default time",
          "base": "BASE_BUILD time / this build's time"}
for name, table in tables.items():
    if not table: continue
    print(f"# op size(B): {titles[name]}, per round; median")
    for (op, size), r in table.items():
        print(f"{op:>15} {size:>10} " + " ".join(f"{x:.2f}" for x in r) + f"   median {statistics.median(r):.2f}x")
PY
