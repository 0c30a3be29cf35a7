# The torch backend's steps of the GPU device check, sourced by tools/gpu/device_check.sh (which
# defines step, python_has, device_ran and the variables used here: ROOT, KIT, BIN, PY, OUT,
# STEPS, SAN, TORCH_BUILD_KEPT, WORK).

# example_agreed DEVICE LOG (a CHECK function): the example's JSON line says it trained on
# DEVICE (cpu, cuda) and that the ranks' parameters agree, and no line says they differ.
example_agreed() {
  if grep -q '"ranks_agree": false' "$2" || ! grep -qE "\"ranks_agree\": true, \"seed\": [0-9]+, \"device\": \"$1" "$2"; then
    echo "no JSON line of a run on $1 whose ranks agree: $(grep -m1 -E 'ranks_agree|FAILED|Error|error' "$2" | cut -c1-160)"
  fi
}

# torch_steps gpu|cpu: the torch backend built here against this machine's PyTorch
# (build_torch_ext.py), then, on a GPU, tools/gpu/torch_cuda_check.py on 2 ranks and on 4 ranks
# as 2 hosts, a rank killed mid-training (torch_fault_check.py --cuda), the Fashion-MNIST example,
# DDP's per-step time (tools/gpu/torch_ddp_timing.py) and the backend check under memcheck
# (last: the slowest, and the one a cut budget leaves out first); in the dry run, the same check
# on CPU tensors on 2 ranks and the example on the CPU, which rehearse the build and the launch.
torch_steps() {
  local mode=$1 ext pybin
  # TSR_GPU_TORCH_BUILD: a build folder kept between runs on the same machine (ninja then
  # rebuilds only what changed); by default one of this run's, removed at its end.
  local TORCH_BUILD=${TORCH_BUILD_KEPT:-$WORK/torch-ext}
  python_has torch-backend-build torch || return 0
  if [ "$mode" = cpu ] && ! "$PY" -c "import sys, torch; sys.exit(tuple(map(int, torch.__version__.split('.')[:2])) < (2, 2))"; then
    printf 'torch-backend-build\tNOT-RUN\t-\t0\tdry run: %s has torch %s (the rehearsal needs 2.2 or later)\n' "$PY" \
      "$("$PY" -c 'import torch; print(torch.__version__)')" >> "$STEPS"
    return 0
  fi
  pybin=$(dirname "$(command -v "$PY")")  # a virtual environment's ninja, the environment not activated
  if ! PATH=$pybin:$PATH command -v ninja >/dev/null; then
    printf 'torch-backend-build\tNOT-RUN\t-\t0\tninja is missing (torch.utils.cpp_extension needs it)\n' >> "$STEPS"
    return 0
  fi
  # A kept build folder: no extension of an earlier run may pass for this one's, and a build
  # killed at its limit leaves cpp_extension's lock behind, which the next would wait on.
  rm -f "$TORCH_BUILD"/_tessera_torch*.so "$TORCH_BUILD/lock"
  # The build imports what it built: libtessera's own dependencies (UCX, spdlog, fmt, hwloc)
  # are the kit's, which the extension's RUNPATH does not reach, so the kit's lib/ is searched.
  CHECK= step torch-backend-build 240 env PATH="$pybin:$PATH" LD_LIBRARY_PATH="$KIT/lib" MAX_JOBS=16 "$PY" \
    "$ROOT/tools/gpu/build_torch_ext.py" "$KIT" "$TORCH_BUILD"
  ext=$(ls "$TORCH_BUILD"/_tessera_torch*.so 2>/dev/null | head -1)
  if [ -z "$ext" ]; then
    printf 'torch-steps\tNOT-RUN\t-\t0\tno torch backend was built (torch-backend-build)\n' >> "$STEPS"
    return 0
  fi
  local env=(-x PYTHONPATH="$ROOT/bindings/python" -x TESSERA_TORCH_EXTENSION="$ext"
             -x TESSERA_LIBRARY="$(ls "$KIT"/lib/libtessera.so* | head -1)")
  # The Fashion-MNIST example (the kit's part of the data): 2 ranks, the Marsit hook, one epoch
  # of 4096 images, on CUDA (on the CPU in the dry run); the ranks must end with the same parameters.
  local example=(-x TSR_TIMEOUT_MS=30000 "$PY" "$ROOT/examples/torch/train_fashion_mnist.py" --hook marsit
                 --epochs 1 --train-limit 4096 --test-limit 1000 --data "$KIT/data/fashion-mnist")
  if [ "$mode" = cpu ]; then
    CHECK= step torch-cpu-2ranks 120 "$BIN/tsrun" -np 2 --timeout @TSRUN_TIMEOUT@ "${env[@]}" -x TSR_TIMEOUT_MS=30000 \
      "$PY" "$ROOT/tools/gpu/torch_cuda_check.py" --cpu
    if [ -d "$KIT/data/fashion-mnist" ]; then
      CHECK="example_agreed cpu" step torch-example-cpu 120 "$BIN/tsrun" -np 2 --timeout @TSRUN_TIMEOUT@ "${env[@]}" \
        "${example[@]}" --device cpu
      CHECK= step torch-fsdp-cpu 150 "$BIN/tsrun" -np 4 --timeout @TSRUN_TIMEOUT@ "${env[@]}" -x TSR_TIMEOUT_MS=30000 \
        "$PY" "$ROOT/bindings/python/tests/torch_fsdp_check.py" --data "$KIT/data/fashion-mnist"
    else
      printf 'torch-example-cpu\tNOT-RUN\t-\t0\tthe kit has no data/fashion-mnist (pack.sh cuts it from Debian'"'"'s dataset-fashion-mnist)\n' >> "$STEPS"
    fi
    return 0
  fi
  # The 2-rank run with the blocking Work.wait() (TSR_TORCH_STREAM_WAIT=0), the other with the
  # default, stream-side one.
  CHECK=device_ran step torch-cuda-2ranks 150 "$BIN/tsrun" -np 2 --timeout @TSRUN_TIMEOUT@ "${env[@]}" \
    -x TSR_TIMEOUT_MS=30000 -x TSR_TORCH_STREAM_WAIT=0 "$PY" "$ROOT/tools/gpu/torch_cuda_check.py"
  CHECK=device_ran step torch-cuda-4ranks-2hosts 180 "$BIN/tsrun" -np 4 --timeout @TSRUN_TIMEOUT@ "${env[@]}" \
    -x TSR_TIMEOUT_MS=30000 "$PY" "$ROOT/tools/gpu/torch_cuda_check.py" --hosts 2
  # A rank killed mid-training on CUDA (DDP's allreduce, then the dense hook; 3 ranks): the
  # others' step and next call raise naming it within the timeout, none hangs or crashes.
  CHECK=device_ran step torch-cuda-fault 100 env PYTHONPATH="$ROOT/bindings/python" TESSERA_TORCH_EXTENSION="$ext" \
    TESSERA_LIBRARY="$(ls "$KIT"/lib/libtessera.so* | head -1)" "$PY" "$ROOT/bindings/python/tests/torch_fault_check.py" \
    "$BIN/tsrun" 3 --cuda
  # DDP on CUDA goes on through a killed rank (the survivors shrink, re-wrap and redo the step),
  # then the same with the killed rank's replacement joining through the COVAP hook.
  # tsrun --elastic ends non-zero once a rank is lost: the survivors' verdict is the check's.
  local verdict='p=$1; shift; "$@" 2>&1 | tee /dev/stderr | grep -E "$p" > /dev/null'
  CHECK=device_ran step torch-cuda-elastic 120 bash -c "$verdict" _ 'torch elastic: [0-9]+ checks passed on 3 ranks' \
    "$BIN/tsrun" --elastic -np 4 --timeout @TSRUN_TIMEOUT@ "${env[@]}" -x TSR_TIMEOUT_MS=20000 "$PY" \
    "$ROOT/bindings/python/tests/torch_elastic_check.py" --cuda
  CHECK=device_ran step torch-cuda-elastic-grow 150 bash -c "$verdict" _ 'torch elastic grow: [0-9]+ checks passed on 4 ranks' \
    "$BIN/tsrun" --respawn 1 -np 4 --timeout @TSRUN_TIMEOUT@ "${env[@]}" -x TSR_TIMEOUT_MS=20000 "$PY" \
    "$ROOT/bindings/python/tests/torch_elastic_check.py" --cuda --grow --hook covap
  # FSDP2 over tessera on CUDA against the same on the CPU (4 ranks, the kit's data): FSDP's
  # gathers and reductions on streams of its own, which the stream-side Work.wait() holds.
  if [ -d "$KIT/data/fashion-mnist" ]; then
    CHECK=device_ran step torch-cuda-fsdp 150 "$BIN/tsrun" -np 4 --timeout @TSRUN_TIMEOUT@ "${env[@]}" \
      -x TSR_TIMEOUT_MS=30000 "$PY" "$ROOT/bindings/python/tests/torch_fsdp_check.py" --cuda \
      --data "$KIT/data/fashion-mnist"
    CHECK="example_agreed cuda" step torch-example-cuda 120 "$BIN/tsrun" -np 2 --timeout @TSRUN_TIMEOUT@ "${env[@]}" \
      "${example[@]}" --device cuda
  else
    for s in torch-cuda-fsdp torch-example-cuda; do
      printf '%s\tNOT-RUN\t-\t0\tthe kit has no data/fashion-mnist (pack.sh cuts it from Debian'"'"'s dataset-fashion-mnist)\n' \
        "$s" >> "$STEPS"
    done
  fi
  # DDP per step over gloo and over tessera with each hook, same ranks, same run (ratios to gloo).
  CHECK=device_ran step torch-ddp-timing 120 "$BIN/tsrun" -np 2 --timeout @TSRUN_TIMEOUT@ "${env[@]}" \
    -x TSR_TIMEOUT_MS=30000 "$PY" "$ROOT/tools/gpu/torch_ddp_timing.py" --steps 10 --warmup 3
  # compute-sanitizer's memcheck over the backend's collectives on CUDA tensors (DDP left out),
  # with a collective timeout that allows for the instrumented ranks' pace. One sanitizer per
  # rank, started by tsrun: wrapped around tsrun (--target-processes all) the ranks passed but
  # never exited, not even on SIGKILL.
  if [ -n "${SAN:-}" ]; then
    CHECK=device_ran step memcheck-torch-cuda 150 "$BIN/tsrun" -np 2 --timeout @TSRUN_TIMEOUT@ "${env[@]}" \
      -x TSR_TIMEOUT_MS=120000 "$SAN" --tool memcheck --error-exitcode 9 \
      "$PY" "$ROOT/tools/gpu/torch_cuda_check.py" --quick
  fi
  # A torch step that failed: the extension built here comes back beside the summary, so that
  # the offsets of a crash's backtrace (+0x...) can be named (addr2line -f -C -e).
  if awk -F'\t' '$1 ~ /^(torch-(backend|cuda|ddp|example)|memcheck-torch)/ && ($2 == "FAIL" || $2 == "TIMEOUT") {bad = 1} END {exit !bad}' \
    "$STEPS"; then
    cp "$ext" "$OUT/" && echo "device_check: a torch step failed: $(basename "$ext") is in $OUT for its symbols"
  fi
}
