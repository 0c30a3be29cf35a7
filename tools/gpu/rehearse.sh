#!/bin/bash
# The GPU device check's rehearsal on a machine without a GPU (docs/gpu.md): packs a kit from a
# CUDA build and runs device_check.sh's dry run from it with a Python whose torch is 2.2 or
# later, which builds the torch backend from the kit as the GPU machine would and runs the torch
# check on CPU tensors and the example. Passes when every step did and the torch steps ran
# (not NOT-RUN).
#
#   tools/gpu/rehearse.sh BUILD_DIR PYTHON WORK_DIR
set -uo pipefail
[ $# = 3 ] || { echo "usage: $0 BUILD_DIR PYTHON WORK_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$1 PY=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" || exit 2
bash "$ROOT/tools/gpu/pack.sh" --no-build --build "$BUILD" --kit "$WORK/kit" || exit 1
TSR_GPU_PYTHON=$PY bash "$ROOT/tools/gpu/device_check.sh" "$WORK/out" --kit "$WORK/kit"
rc=$?
for s in torch-backend-build torch-cpu-2ranks torch-example-cpu; do
  grep -q "^$s *PASS" "$WORK/out/summary.txt" || { echo "rehearse: $s did not pass"; rc=1; }
done
[ $rc = 0 ] && rm -rf "$WORK/kit"  # 23 MB; kept for a look when the rehearsal failed
exit $rc
