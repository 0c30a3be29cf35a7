#!/usr/bin/env bash
# small_latency.sh [N] [ROUNDS]: small-message allreduce latency on this host, Tessera against
# Open MPI (shared memory, vader) in one run, interleaved ROUNDS times (default 2). Same method
# for both: barrier, one f32 sum, slowest rank, median over 200 iterations.
set -euo pipefail
n=${1:-4} rounds=${2:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${TSR_BUILD:-$root/build}
bin=$(mktemp -d /tmp/tsr-mpi-small.XXXXXX)
trap 'rm -rf "$bin"' EXIT
command -v mpicc >/dev/null || { echo "small_latency.sh: mpicc not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 2; }
mpicc -O2 -o "$bin/mpi_small" "$root/tools/bench/peers/mpi_small_allreduce.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for ((r = 1; r <= rounds; r++)); do
  echo "## round $r: Tessera"
  timeout 300 "$build/bin/tsrun" -np "$n" "$build/bin/tsr-bench" -b 8 -e 32K -f 8 -n 200 -w 10 | grep -v '^\[0\] #\s*$'
  echo "## round $r: Open MPI (vader shared memory)"
  timeout 300 mpirun -np "$n" --bind-to none --oversubscribe --mca pml ob1 --mca btl vader,self \
    --mca mpi_yield_when_idle 1 "$bin/mpi_small" 8,64,512,4096,32768 200
done
