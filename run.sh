#!/usr/bin/env bash
# ./run.sh: install what is missing, build, then run the main job on 4 local ranks (tsrun):
#   1. tsr-check: allreduce, all-gather, reduce-scatter, broadcast and barrier (its --help lists
#      the ten cases), checked against a float64 reference, as a table;
#   2. the MLP trainer: the digits set trained with dense, Marsit, SparDL, SelSync
#      and COVAP, one row each (time and bytes per step, test accuracy), written as JSON lines.
# Both always run; the exit status is non-zero if either failed.
# Extra arguments go to tsrun before each program (e.g. ./run.sh -np 3).
set -euo pipefail
source "$(dirname "$0")/scripts/common.sh"
cd "$TSR_ROOT"
tsr_install_missing
tsr_build build -DCMAKE_BUILD_TYPE=Release >/dev/null
status=0
# 4 ranks on this machine (tools/hostfiles/local4) unless the arguments say how many or where
# (tsrun takes each once): then tsrun's own defaults fill in the rest (-np N alone: N ranks
# here; a host list alone: all its slots).
where=(-np 4 --hostfile tools/hostfiles/local4)
for a in "$@"; do
  case $a in -np | -n | --np | -np=* | --np=* | -H | --host | --host=* | --hostfile | --hostfile=* | \
    --machinefile | --machinefile=*) where=() ;; esac
done
build/bin/tsrun "${where[@]}" "$@" build/bin/tsr-check || status=$?

json=$TSR_ROOT/build/mlp-trainer.jsonl
rm -f "$json"
if digits=$(tsr_fetch_digits); then
  build/bin/tsrun "${where[@]}" "$@" build/bin/example-train-mlp \
    --data "$digits" --epochs 30 --json "$json" || status=$?
else
  status=1
fi
[ -s "$json" ] && echo "tessera: MLP trainer results (JSON lines): $json"
exit "$status"
