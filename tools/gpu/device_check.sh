#!/bin/bash
# The GPU device check (docs/gpu.md): runs Tessera's CUDA code on the machine's GPU from the kit
# that tools/gpu/pack.sh made (gpu-kit/, carried to the device machine), and writes
# summary.json, summary.txt and logs.tar.gz into OUT_DIR.
#
#   tools/gpu/device_check.sh OUT_DIR [--kit DIR]   the check (a dry run without a GPU)
#   tools/gpu/device_check.sh --verify-only [--kit DIR]   only: is the kit complete?
#
# The kit is verified first: every binary and library resolves its libraries from the kit or
# from glibc / libstdc++ / the GPU driver. Without a GPU (no nvidia-smi, or it lists none) it
# prints "no GPU: dry run", runs each program once in its no-device mode, and exits 0 when the
# kit is complete. With a GPU: the CUDA tests, the kernel tests under compute-sanitizer, the
# multi-rank device checks under tsrun (2 and 4 ranks), the device kernel benchmark against a
# device-to-device memcpy and torch.topk, and the direct device path when the kit has UCX with
# CUDA, then the torch backend's steps (last: a budget cut falls on them). Each step has its own
# timeout, all of them together TSR_GPU_BUDGET_S (default 540 s; the device tool allows 600 s a
# command). TSR_GPU_STEPS (an extended regular expression) runs only the steps whose names match
# it, the others reported NOT-RUN: a short session spends its device time on the steps that have
# not passed yet (TSR_GPU_STEPS=torch for the torch backend's, its memcheck included).
# TSR_GPU_PYTHON names the Python with PyTorch (default python3); TSR_GPU_TORCH_BUILD a folder
# for the torch backend's build that outlives the run (a second run on a warm machine then
# skips the build's compile). The dry run rehearses the torch
# steps on CPU tensors where that Python's torch is 2.2 or later: the backend built from the kit,
# torch_cuda_check.py --cpu on 2 ranks.
# Exit status: 0 when every step that ran passed, 1 otherwise, 2 for a bad kit or usage.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KIT=$ROOT/gpu-kit
OUT=
VERIFY_ONLY=0
while [ $# -gt 0 ]; do
  case $1 in
    --kit) KIT=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    --verify-only) VERIFY_ONLY=1; shift ;;
    -*) echo "usage: $0 OUT_DIR [--kit DIR] | --verify-only [--kit DIR]" >&2; exit 2 ;;
    *) OUT=$1; shift ;;
  esac
done
[ $VERIFY_ONLY = 1 ] || [ -n "$OUT" ] || { echo "usage: $0 OUT_DIR [--kit DIR] | --verify-only [--kit DIR]" >&2; exit 2; }
START=$(date +%s)
BUDGET=${TSR_GPU_BUDGET_S:-540}
PY=${TSR_GPU_PYTHON:-python3}
STEPS_WANTED=${TSR_GPU_STEPS:-}
TORCH_BUILD_KEPT=${TSR_GPU_TORCH_BUILD:-}
# The script's own settings stay here: the ranks would warn of TSR_ variables they do not know.
unset TSR_GPU_BUDGET_S TSR_GPU_PYTHON TSR_GPU_STEPS TSR_GPU_TORCH_BUILD
BASE_LIBS="linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libgcc_s.so.1 libstdc++.so.6 libcuda.so.1 libnvidia-ml.so.1"

# verify_kit LIBDIRS FILES...: each file's libraries resolve in LIBDIRS (a : list) or are base
# libraries.
verify_kit() {
  local libdir=$1 bad=0 f line soname path real d inside
  shift
  for f in "$@"; do
    [ -f "$f" ] || { echo "missing: $f"; bad=1; continue; }
    while read -r line; do
      soname=$(echo "$line" | awk '{print $1}')
      case $line in *"not found"*)  # the driver's libraries exist only where a GPU does
        case $soname in libcuda.so.1|libnvidia-ml.so.1) ;; *) echo "$f: $line"; bad=1 ;; esac; continue ;; esac
      path=$(echo "$line" | awk '$2 == "=>" {print $3}')
      [ -n "$path" ] || continue
      case " $BASE_LIBS " in *" $soname "*) continue ;; esac
      real=$(readlink -f "$path") inside=0
      for d in ${libdir//:/ }; do case $real in "$(readlink -f "$d")"/*) inside=1 ;; esac; done
      [ $inside = 1 ] || { echo "$f: $soname from $path, outside the kit"; bad=1; }
    done < <(LD_LIBRARY_PATH=$libdir ldd "$f" 2>&1)
  done
  return $bad
}

[ -f "$KIT/MANIFEST.txt" ] || { echo "device_check: no kit at $KIT (make it with tools/gpu/pack.sh)"; exit 2; }
chmod u+x "$KIT"/bin/* 2>/dev/null
KIT_FILES=$(cd "$KIT" && ls bin/* lib/*.so* lib/ucx/*.so* 2>/dev/null | sed "s|^|$KIT/|")
for want in $(sed -n 's/^tests //p; s/^tools //p' "$KIT/MANIFEST.txt"); do
  [ -f "$KIT/bin/$want" ] || { echo "device_check: kit lacks bin/$want"; exit 2; }
done
VERIFY_LOG=$(verify_kit "$KIT/lib" $KIT_FILES)
VERIFY_RC=$?
if [ -d "$KIT/ucx-cuda/lib" ]; then
  UCX_VERIFY=$(verify_kit "$KIT/ucx-cuda/lib:$KIT/lib" "$KIT"/ucx-cuda/lib/*.so* "$KIT"/ucx-cuda/lib/ucx/*.so* \
               "$KIT/ucx-cuda/bin/ucx_info") || { VERIFY_LOG="$VERIFY_LOG
$UCX_VERIFY"; VERIFY_RC=1; }
fi
NFILES=$(echo "$KIT_FILES" | wc -w)
if [ $VERIFY_RC != 0 ]; then
  echo "device_check: the kit at $KIT is incomplete:"; echo "$VERIFY_LOG"; exit 2
fi
echo "device_check: kit verified: $NFILES binaries and libraries resolve from $KIT/lib or glibc/libstdc++/the driver ($(du -sh "$KIT" | cut -f1))"
[ -d "$KIT/ucx-cuda" ] && echo "device_check: optional UCX with CUDA present: $KIT/ucx-cuda"
[ $VERIFY_ONLY = 1 ] && exit 0

mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
LOGS=$WORK/logs
mkdir -p "$LOGS"
export TMPDIR=$WORK
STEPS=$WORK/steps.tsv   # name, result, rc, seconds, note
: > "$STEPS"
export LD_LIBRARY_PATH=$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BIN=$KIT/bin

# step NAME TIMEOUT CMD...: runs CMD with its output in logs/NAME.log; records PASS, FAIL,
# TIMEOUT or NOT-RUN (the budget would not cover it). A check function named by CHECK (if
# set) may turn a PASS into a FAIL by printing a reason. An argument @TSRUN_TIMEOUT@ becomes
# the step's limit (cut by the budget) less 10 s: tsrun ends its ranks, naming the late ones,
# before the step's timeout kills it.
step() {
  local name=$1 limit=$2 left rc t0 note="" a
  shift 2
  if [ -n "$STEPS_WANTED" ] && ! [[ $name =~ $STEPS_WANTED ]]; then
    printf '%s\tNOT-RUN\t-\t0\tnot selected (TSR_GPU_STEPS)\n' "$name" >> "$STEPS"
    return 0
  fi
  left=$((BUDGET - ($(date +%s) - START) - 15))
  if [ "$left" -lt 20 ]; then
    printf '%s\tNOT-RUN\t-\t0\tthe %ss budget was spent\n' "$name" "$BUDGET" >> "$STEPS"
    echo "== $name: NOT RUN (budget)"; return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local args=()
  for a in "$@"; do [ "$a" = @TSRUN_TIMEOUT@ ] && a=$((limit - 10)); args+=("$a"); done
  set -- "${args[@]}"
  echo "== $name (limit ${limit}s)"
  t0=$(date +%s.%N)
  # The Python checks dump their stacks 25 s before the step's end (a hang says where), 15 s
  # before tsrun's own --timeout where the budget has not cut the limit; 20 s before it, every
  # process of the step still running gives its native threads' stacks (native_stacks).
  TESSERA_CHECK_DUMP_S=$((limit - 25)) timeout -k 5 "$limit" "$@" > "$LOGS/$name.log" 2>&1 &
  local pid=$! watcher=
  if [ -n "$GDB" ] && [ "$limit" -gt 40 ] && [ "$name" != torch-backend-build ]; then  # not the compilers
    (for ((i = 0; i < limit - 20; i++)); do kill -0 $pid 2>/dev/null || exit 0; sleep 1; done
     native_stacks $pid > "$LOGS/$name.stacks" 2>&1) &
    watcher=$!
  fi
  wait $pid
  rc=$?
  if [ -n "$watcher" ]; then  # ended in time: no stacks (and no second more); else they are taken
    [ -s "$LOGS/$name.stacks" ] || kill $watcher 2>/dev/null
    wait $watcher 2>/dev/null
  fi
  local secs
  secs=$(awk "BEGIN {print $(date +%s.%N) - $t0}")
  local result=PASS
  if [ $rc = 124 ] || [ $rc = 137 ]; then result=TIMEOUT; note="killed after ${limit}s"
  elif [ $rc != 0 ] && [[ $name == memcheck-* ]] && grep -q 'Device not supported' "$LOGS/$name.log"; then
    # Some sandboxes (gVisor) keep compute-sanitizer off the device: nothing was checked.
    result=NOT-RUN note="compute-sanitizer refused the device: $(grep -m1 'Device not supported' "$LOGS/$name.log" | cut -c1-120)"
  elif [ $rc != 0 ]; then
    # A Python check's named failure ("rank R: FAILED: what") first, else the first sign of one.
    result=FAIL; note=$({ grep -m1 'FAILED: ' "$LOGS/$name.log" || grep -m1 -E 'FAIL|Failure|ERROR|error' "$LOGS/$name.log"; } | cut -c1-200)
  elif [ -n "${CHECK:-}" ]; then note=$($CHECK "$LOGS/$name.log"); [ -n "$note" ] && result=FAIL
  fi
  [ $result = PASS ] && [ -z "$note" ] && note=$(grep -m1 -E 'tests? ran|passed, [0-9]+ failed|PASSED' "$LOGS/$name.log" | cut -c1-200)
  [ -s "$LOGS/$name.stacks" ] && note="$note (native stacks of the late processes: logs/$name.stacks)"
  printf '%s\t%s\t%s\t%.1f\t%s\n' "$name" "$result" "$rc" "$secs" "$note" >> "$STEPS"
  echo "   $result (rc $rc, ${secs%.*}s) $note"
  tail -n 3 "$LOGS/$name.log" | sed 's/^/   | /'
}
# native_stacks PID: every thread's stack of each process under PID (the step's timeout) that is
# not a launcher (timeout, tsrun, the sanitizer), from a debugger that attaches (gdb, or the
# image's cuda-gdb), all at once and each bounded, so that they fit in the step's last 20 s.
GDB=$(command -v gdb || command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null)
native_stacks() {
  local parents=$1 p kids all=() dir
  while [ -n "$parents" ]; do  # the whole tree under PID, a generation at a time
    kids=$(for p in $parents; do pgrep -P "$p"; done)
    all+=($kids)
    parents=$kids
  done
  dir=$(mktemp -d)
  for p in "${all[@]}"; do
    case $(cat "/proc/$p/comm" 2>/dev/null) in timeout|tsrun|compute-sanitiz*|bash|sh|sleep|"") continue ;; esac
    { echo "##### pid $p: $(tr '\0' ' ' < "/proc/$p/cmdline" | cut -c1-200)"
      timeout 15 "$GDB" -p "$p" -batch -ex "info threads" -ex "thread apply all bt 30" 2>&1 |
        grep -v -E '^\[New LWP|^\[Thread debugging|^Using host libthread_db|^warning:'
    } > "$dir/$p" &
  done
  wait
  cat "$dir"/* 2>/dev/null
  rm -rf "$dir"
}
# CHECK functions: a CUDA test that skipped on a GPU machine did not run.
no_skips() { grep -q '\[  SKIPPED \]' "$1" && echo "skipped on a GPU machine: $(grep -m1 'Skipped\|SKIPPED' "$1")"; }
# A program that found no usable device on a GPU machine (a driver or runtime problem) ran nothing.
device_ran() { grep -q 'no CUDA device' "$1" && echo "ran without a usable CUDA device: $(grep -m1 -o 'no CUDA device.*' "$1" | cut -c1-160)"; }
# The direct job must have taken the direct path (the creation log at info says which).
direct_path() {
  local d s
  device_ran "$1" && return
  d=$(grep -c 'memory=cuda on .*direct device path' "$1")
  s=$(grep -c 'memory=cuda on .*staged through pinned' "$1")
  echo "$d direct, $s staged tensor creations" > "$1.paths"
  [ "$d" -gt 0 ] || echo "no tensor took the direct device path ($s staged)"
}

# python_has STEP MODULE...: whether $PY imports the modules. One missing records STEP as
# NOT-RUN; any other import failure (a library that does not load, with the kit's lib/ searched
# first as in the steps) records it as FAIL with the error, which a NOT-RUN would have hidden.
python_has() {
  local name=$1 mods err
  shift
  mods=$(IFS=,; echo "$*")
  err=$("$PY" -c "import $mods" 2>&1 >/dev/null) && return 0
  if echo "$err" | grep -q 'ModuleNotFoundError'; then
    printf '%s\tNOT-RUN\t-\t0\t%s lacks one of %s: %s\n' "$name" "$PY" "$mods" "$(echo "$err" | tail -1 | cut -c1-160)" >> "$STEPS"
  else
    printf '%s\tFAIL\t1\t0\t%s cannot import %s: %s\n' "$name" "$PY" "$mods" "$(echo "$err" | tail -1 | cut -c1-160)" >> "$STEPS"
    echo "== $name: FAIL: $PY cannot import $mods:"; echo "$err" | tail -5 | sed 's/^/   | /'
  fi
  return 1
}

# python_cuda_step LIMIT [CHECK]: tools/gpu/python_cuda_check.py on 2 ranks under the kit's tsrun,
# with the package from the working tree and the kit's libtessera.
python_cuda_step() {
  python_has python-cuda-2ranks numpy torch || return 0
  CHECK=${2:-} step python-cuda-2ranks "$1" "$BIN/tsrun" -np 2 --timeout @TSRUN_TIMEOUT@ -x TSR_TIMEOUT_MS=30000 \
    -x PYTHONPATH="$ROOT/bindings/python" -x TESSERA_LIBRARY="$(ls "$KIT"/lib/libtessera.so* | head -1)" \
    "$PY" "$ROOT/tools/gpu/python_cuda_check.py"
}

# torch_steps gpu|cpu and its check functions (tools/gpu/torch_steps.sh).
source "$ROOT/tools/gpu/torch_steps.sh"

ENV=$WORK/env.txt
{
  echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host $(uname -n) kernel $(uname -r)"
  sed -n 's/^commit /kit_commit /p; s/^build /kit_build /p; s/^cuda /kit_cuda /p' "$KIT/MANIFEST.txt"
} > "$ENV"

GPU=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L > "$LOGS/nvidia-smi-L.log" 2>&1 && grep -q '^GPU ' "$LOGS/nvidia-smi-L.log"; then
  GPU=1
fi

if [ $GPU = 0 ]; then
  echo "device_check: no GPU: dry run (nvidia-smi $(command -v nvidia-smi >/dev/null && echo 'lists none' || echo 'not found'))"
  echo "mode dry-run" >> "$ENV"
  # Each program once in its no-device mode: they start, find their libraries and skip.
  CHECK= step gtest-kernels_cuda 60 "$BIN/kernels_cuda_tests"
  CHECK= step gtest-device_kernels 60 "$BIN/device_kernels_tests"
  CHECK= step gtest-c_api_device 60 "$BIN/c_api_device_tests"
  CHECK= step gpu-check-2ranks-host-halves 120 "$BIN/tsrun" -np 2 --timeout @TSRUN_TIMEOUT@ "$BIN/tsr-gpu-check" --count 4099 --steps 2
  CHECK= step device-kernel-bench 30 "$BIN/tsr-device-kernel-bench"
  python_cuda_step 60
  if [ -d "$KIT/ucx-cuda/lib" ]; then  # Tessera on the kit's own UCX build (its CUDA module needs a driver)
    CHECK= step ucx-info-cuda 30 env LD_LIBRARY_PATH="$KIT/ucx-cuda/lib:$KIT/lib" "$KIT/ucx-cuda/bin/ucx_info" -v
    CHECK= step direct-2ranks-host-halves 120 env LD_LIBRARY_PATH="$KIT/ucx-cuda/lib:$KIT/lib" "$BIN/tsrun" -np 2 \
      --timeout @TSRUN_TIMEOUT@ "$BIN/tsr-gpu-check" --count 4099 --steps 2 --only tensors
  fi
  torch_steps cpu  # the torch steps' build and launch, on CPU tensors
else
  echo "mode gpu" >> "$ENV"
  nvidia-smi > "$LOGS/nvidia-smi.log" 2>&1
  {
    echo "gpu $(nvidia-smi --query-gpu=name,memory.total,driver_version,pci.bus_id --format=csv,noheader | head -1)"
    echo "cuda_driver_api $(sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' "$LOGS/nvidia-smi.log" | head -1)"
    echo "nvcc $( (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>/dev/null | sed -n 's/.*release \([0-9.]*\), \(V[0-9.]*\).*/\1 \2/p')"
    echo "compute_sanitizer $( (compute-sanitizer --version || /usr/local/cuda/bin/compute-sanitizer --version) 2>/dev/null | sed -n 's/.*Version \(.*\)/\1/p' | head -1)"
  } >> "$ENV"
  SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  # 1. The CUDA tests that skip without a GPU, and the ones whose expectations depend on one.
  CHECK=no_skips step gtest-kernels_cuda 90 "$BIN/kernels_cuda_tests"
  CHECK=no_skips step gtest-device_kernels 90 "$BIN/device_kernels_tests"
  CHECK=no_skips step gtest-c_api_device 120 "$BIN/c_api_device_tests"
  CHECK= step gtest-c_api-memory 90 "$BIN/c_api_tests" --gtest_filter='CApi.MemoryType*:CApi.TensorMemoryParameter'
  CHECK= step gtest-device_staging 90 "$BIN/device_staging_tests"
  CHECK= step gtest-dense_device 90 "$BIN/dense_device_tests"
  # 2. Multi-rank jobs on the one GPU: dense TSR_MEM_CUDA and every device tensor vs host.
  CHECK=device_ran step gpu-check-2ranks 120 "$BIN/tsrun" -np 2 --timeout @TSRUN_TIMEOUT@ -x TSR_LOG_LEVEL=info -x TSR_TIMEOUT_MS=30000 "$BIN/tsr-gpu-check" --hosts 1
  CHECK=device_ran step gpu-check-4ranks-2hosts 150 "$BIN/tsrun" -np 4 --timeout @TSRUN_TIMEOUT@ -x TSR_LOG_LEVEL=info -x TSR_TIMEOUT_MS=30000 "$BIN/tsr-gpu-check" --hosts 2
  # The Python layer's dense collectives on PyTorch CUDA tensors (staged), from the working tree.
  python_cuda_step 120 device_ran
  # 3. The kernels on device memory against a device-to-device memcpy, top-k against torch.topk.
  CHECK=device_ran step device-kernel-bench 120 "$BIN/tsr-device-kernel-bench" --json "$WORK/kernel-bench.json" \
    --dump-input "$WORK/x.f32" --dump-topk "$WORK/topk.u32"
  if [ -f "$WORK/topk.u32" ]; then
    CHECK= step torch-topk 120 env -u LD_LIBRARY_PATH "$PY" "$ROOT/tools/gpu/torch_topk.py" "$WORK/x.f32" "$WORK/topk.u32" \
      --bench-json "$WORK/kernel-bench.json" --out "$WORK/torch-topk.json"
  fi
  rm -f "$WORK/x.f32" "$WORK/topk.u32"
  # 4. The kernel tests under compute-sanitizer (memcheck).
  if [ -n "$SAN" ]; then
    CHECK=no_skips step memcheck-kernels_cuda 150 "$SAN" --tool memcheck --error-exitcode 9 "$BIN/kernels_cuda_tests"
    CHECK=no_skips step memcheck-device_kernels 150 "$SAN" --tool memcheck --error-exitcode 9 "$BIN/device_kernels_tests"
  else
    printf 'memcheck\tNOT-RUN\t-\t0\tcompute-sanitizer not found\n' >> "$STEPS"
  fi
  # 5. The direct device path: UCX built with CUDA, device buffers straight to UCX.
  if [ -d "$KIT/ucx-cuda/lib" ]; then
    UCXLIB=$KIT/ucx-cuda/lib:$KIT/lib
    CHECK= step ucx-info-cuda 30 env LD_LIBRARY_PATH="$UCXLIB" "$KIT/ucx-cuda/bin/ucx_info" -d
    CHECK=direct_path step direct-2ranks 120 env LD_LIBRARY_PATH="$UCXLIB" "$BIN/tsrun" -np 2 --timeout @TSRUN_TIMEOUT@ \
      -x TSR_LOG_LEVEL=info -x TSR_TIMEOUT_MS=30000 "$BIN/tsr-gpu-check" --hosts 1 --only tensors
    CHECK=direct_path step direct-4ranks-2hosts 150 env LD_LIBRARY_PATH="$UCXLIB" "$BIN/tsrun" -np 4 --timeout @TSRUN_TIMEOUT@ \
      -x TSR_LOG_LEVEL=info -x TSR_TIMEOUT_MS=30000 "$BIN/tsr-gpu-check" --hosts 2 --only tensors
  else
    printf 'direct-path\tNOT-RUN\t-\t0\tthe kit has no UCX with CUDA (docs/gpu.md)\n' >> "$STEPS"
  fi
  # 6. The torch backend on CUDA tensors: every collective, streams, futures, split, DDP.
  torch_steps gpu
fi

# Summary: JSON and text into OUT, every log in one archive (the device tool returns at most 8 files).
echo "elapsed $(( $(date +%s) - START ))" >> "$ENV"
python3 "$ROOT/tools/gpu/summarize.py" "$ENV" "$STEPS" "$WORK" "$OUT/summary.json" "$OUT/summary.txt"
for f in "$LOGS"/*.log; do  # a runaway log keeps its first and last 2 MiB
  [ "$(stat -c %s "$f")" -gt 4194304 ] && { head -c 2097152 "$f"; echo "[... cut ...]"; tail -c 2097152 "$f"; } > "$f.cut" && mv "$f.cut" "$f"
done
tar -czf "$OUT/logs.tar.gz" -C "$WORK" logs env.txt steps.tsv $(cd "$WORK" && ls ./*.json 2>/dev/null) 2>/dev/null
cat "$OUT/summary.txt"
RC=0
cut -f2 "$STEPS" | grep -q -x -E 'FAIL|TIMEOUT' && RC=1
[ -s "$OUT/summary.json" ] || RC=1
rm -rf "$WORK"
exit $RC
