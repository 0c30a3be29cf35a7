#!/usr/bin/env bash
# ./run.sh: install what is missing, build, then run the main job: a 4-rank local job
# launched by tsrun that runs every collective, checks the results and prints a table.
# Extra arguments go to tsrun before the program (e.g. ./run.sh -np 3).
set -euo pipefail
source "$(dirname "$0")/scripts/common.sh"
cd "$TSR_ROOT"
tsr_install_missing
tsr_build build -DCMAKE_BUILD_TYPE=Release >/dev/null
exec build/bin/tsrun -np 4 --hostfile tools/hostfiles/local4 "$@" build/bin/tsr-check
