#!/usr/bin/env bash
# scripts/build_torch_backend.sh [PYTHON]: build Tessera's torch.distributed backend against the
# PyTorch of PYTHON (default: the python3 on PATH, e.g. an active virtual environment's), with
# libtessera and tsrun, into build/; then prints how to use it. Any PyTorch from 1.13 on.
set -euo pipefail
source "$(dirname "$0")/common.sh"
python=${1:-$(command -v python3)}
python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python")
"$python" -c "import torch" 2>/dev/null || {
  echo "tessera: $python has no torch (pip install torch)" >&2; exit 1; }
tsr_install_missing
cd "$TSR_ROOT"
tsr_configure build -DCMAKE_BUILD_TYPE=Release "-DTSR_TORCH_PYTHONS=$python"
grep "torch backend" build/configure.log || true
cmake --build build -j"$(nproc)" --target tessera tsrun tessera_torch
version=$("$python" -c "import torch; print(torch.__version__)")
echo "tessera: the backend for PyTorch $version is in build/lib/torch/$version/. Use it with:"
echo "  export PYTHONPATH=$TSR_ROOT/bindings/python TESSERA_LIBRARY=$TSR_ROOT/build/lib/libtessera.so"
echo "  $TSR_ROOT/build/bin/tsrun -np 4 $python your_script.py   # import tessera.torch; init_process_group(\"tessera\")"
