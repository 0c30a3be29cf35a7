#!/usr/bin/env bash
# pip_install_check.sh SOURCE_DIR PYTHON ISOLATION: `pip wheel` of this source tree, installed
# into a new virtual environment made from PYTHON (whose torch the backend is built against),
# and a user's first steps there with nothing from the checkout on the path: `import tessera`
# finds its own library, tsrun is on the venv's PATH, and the torch backend check runs under it.
# ISOLATION: "isolated" (pip's default build isolation: the build's Python does not see the
# venv's torch, the CMake probe does) or "no-isolation" (--no-build-isolation).
#   PYTHON /usr/bin/python3: a venv with Debian's site packages (PyTorch 1.13, NumPy).
#   PYTHON a venv's python (PyPI's PyTorch 2.x): a new venv that sees that one's packages (a .pth).
# scikit-build-core comes from PyPI (pip's cache after the first time). CUDA is left out of the
# build (TSR_WITH_CUDA=OFF), to keep the check short.
set -euo pipefail
src=$(cd "$1" && pwd) python=$2 isolation=${3:-no-isolation}
venv=$(mktemp -d /tmp/tsr-pip.XXXXXX)
trap 'rm -rf "$venv"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ "$(dirname "$(dirname "$python")")" = /usr ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
else
  /usr/bin/python3 -m venv "$venv"
  echo "$site" >"$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/outer.pth"
fi
torch_version=$("$venv/bin/python" -c 'import torch; print(torch.__version__)') || fail "the venv sees no torch"
flags=()
if [ "$isolation" = no-isolation ]; then
  flags=(--no-build-isolation)
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" ||
    fail "pip install scikit-build-core (PyPI)"
fi
log="$venv/pip.log"
export CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1  # the checkout's compiler cache serves this build too
# `pip wheel` builds the wheel `pip install .` would, and installing it is what pip does next.
"$venv/bin/python" -m pip wheel --disable-pip-version-check "${flags[@]}" --no-deps -w "$venv/wheels" \
  --config-settings=cmake.define.TSR_WITH_CUDA=OFF "$src" >"$log" 2>&1 || { tail -40 "$log"; fail "pip wheel $src"; }
wheel=$(ls "$venv"/wheels/tessera-*.whl) || fail "pip wheel made no tessera wheel"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" >>"$log" 2>&1 ||
  { tail -20 "$log"; fail "pip install $wheel"; }

# What the user has now: tsrun on the venv's PATH, the package with its own library and backend.
[ -x "$venv/bin/tsrun" ] || fail "no tsrun in $venv/bin"
cd "$venv"
info=$(env -u TESSERA_LIBRARY -u PYTHONPATH "$venv/bin/python" -c '
import tessera, tessera._capi as c, tessera.torch
print(tessera.__file__); print(c.LIBRARY_PATH); print(tessera.__version__)') || fail "import tessera.torch: $info"
grep -q "^$venv/lib/" <<<"$info" || fail "tessera did not come from the venv: $info"
version=$("$venv/bin/tsr-info" --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+$')
[ "$(tail -1 <<<"$info")" = "$version" ] || fail "tessera.__version__ differs from tsr-info's $version: $info"
pip_version=$("$venv/bin/python" -m pip show tessera | sed -n 's/^Version: //p')
[ "$pip_version" = "$version" ] || fail "pip says tessera $pip_version, tsr-info $version"
out=$(env -u TESSERA_LIBRARY -u PYTHONPATH PATH="$venv/bin:$PATH" tsrun -np 2 -x PYTHONPATH="$src/bindings/python/tests" \
      "$venv/bin/python" "$src/bindings/python/tests/torch_backend_check.py" 2>&1) || fail "the torch backend check: $out"
grep -q "torch backend: [0-9]* checks passed on 2 ranks" <<<"$out" || fail "no pass line: $out"
# No RUNPATH with an empty entry (the working directory) in what the wheel installed.
for f in $(find "$venv/lib" -path '*/tessera/*' -name '*.so*') "$venv"/bin/tsr*; do
  head -c 4 "$f" | grep -q ELF || continue
  path=$(readelf -d "$f" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p')
  case ":$path:" in *::*) [ -n "$path" ] && fail "$f has the RUNPATH '$path': an empty entry (the working directory)" ;; esac
done
echo "PASSED: pip install ($isolation) into a venv with PyTorch $torch_version, tessera $version used from there"
