# Shared by run.sh and test.sh: install what is missing, configure, build.
# Sourced, not run. Uses apt-get only when a package is missing.

TSR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TSR_PACKAGES=(cmake ninja-build g++ pkg-config libucx-dev ucx-utils libhwloc-dev hwloc
              libboost-dev libspdlog-dev libfmt-dev libgtest-dev libssl-dev libcli11-dev
              iproute2 zlib1g-dev python3-numpy libsimgrid-dev clang-format
              python3-torch libtorch-dev pybind11-dev python3-dev python3-venv python3-matplotlib
              dataset-fashion-mnist ccache dpkg-dev clang)

# PyTorch 2.x, from PyPI, beside Debian's 1.13: the torch backend is built and checked against
# both. Pinned to the version of the GPU machines; kept outside the checkout so that every clone
# (and CI) reuses it: a CUDA build of about 5 GB installed, which runs on the CPU.
TSR_TORCH2_VERSION=2.11.0
TSR_TORCH2_VENV=${TSR_TORCH2_VENV:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/tessera/venv-torch-$TSR_TORCH2_VERSION}

tsr_install_missing() {
  local missing=()
  for p in "${TSR_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "tessera: installing missing packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# tsr_torch2_python: the interpreter of the PyTorch 2.x virtual environment, made (pip, from PyPI)
# only when it is missing or holds another torch. Prints its path; messages go to stderr.
tsr_torch2_python() {
  local python=$TSR_TORCH2_VENV/bin/python
  if "$python" -c "import sys, torch, numpy; sys.exit(torch.__version__.split('+')[0] != '$TSR_TORCH2_VERSION')" \
       2>/dev/null; then
    echo "$python"; return 0
  fi
  echo "tessera: installing PyTorch $TSR_TORCH2_VERSION from PyPI into $TSR_TORCH2_VENV (about 5 GB)" >&2
  /usr/bin/python3 -m venv "$TSR_TORCH2_VENV" >&2 &&
    "$python" -m pip install -q --disable-pip-version-check "torch==$TSR_TORCH2_VERSION" "numpy<3" >&2 || {
    echo "tessera: could not install PyTorch $TSR_TORCH2_VERSION into $TSR_TORCH2_VENV (pip, PyPI)" >&2
    return 1
  }
  echo "$python"
}

# ccache (CMakeLists.txt uses it when installed): paths inside the checkout are hashed relative
# to it, and the build folder's path is left out, so every clone of the tree shares one cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$TSR_ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

# tsr_configure DIR [cmake args...]: configure DIR once, and again when the arguments change.
tsr_configure() {
  local dir=$1; shift
  local args="$*"
  if [ ! -f "$dir/build.ninja" ] || [ "$(cat "$dir/tsr-configure-args" 2>/dev/null)" != "$args" ]; then
    mkdir -p "$dir"
    cmake -S "$TSR_ROOT" -B "$dir" -G Ninja "$@" >"$dir/configure.log" 2>&1 || {
      cat "$dir/configure.log"; echo "tessera: configure failed ($dir)"; return 1; }
    echo "$args" >"$dir/tsr-configure-args"
  fi
}

# tsr_build DIR [cmake args...]: configure (tsr_configure), then build everything in DIR.
tsr_build() {
  tsr_configure "$@"
  cmake --build "$1" -j"$(nproc)"
}

# tsr_fetch_digits [FILE]: the sklearn "digits" set (1797 8x8 images) for the MLP trainer,
# taken from Debian's python3-sklearn .deb (fetched with apt-get download, not installed:
# none of its dependencies are needed) only when FILE (default build/data/digits.csv.gz) is
# missing. Prints FILE's path on stdout; messages go to stderr.
tsr_fetch_digits() {
  local dest=${1:-$TSR_ROOT/build/data/digits.csv.gz}
  if [ -s "$dest" ]; then echo "$dest"; return 0; fi
  mkdir -p "$(dirname "$dest")"
  local tmp member pkg
  tmp=$(mktemp -d)
  chmod 755 "$tmp"  # apt's _apt user writes the download here when run as root
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  for pkg in python3-sklearn python3-sklearn-lib; do
    # A machine that never ran apt-get update has no package lists: update once, retry.
    (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null 2>&1) ||
      { $sudo apt-get update -qq >/dev/null 2>&1 && (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null 2>&1); } ||
      continue
    member=$(dpkg-deb -c "$tmp"/"$pkg"_*.deb | awk '{print $NF}' | grep '/sklearn/datasets/data/digits.csv.gz$' | head -1)
    [ -n "$member" ] || continue
    dpkg-deb --fsys-tarfile "$tmp"/"$pkg"_*.deb | tar -xO "$member" >"$tmp/digits.csv.gz"
    break
  done
  local rows
  rows=$(gzip -dc "$tmp/digits.csv.gz" 2>/dev/null | wc -l)
  if [ "$rows" != 1797 ]; then
    echo "tessera: could not get digits.csv.gz from Debian's python3-sklearn (apt-get download;" \
         "got ${rows:-0} rows, expected 1797). Put the file at $dest by hand." >&2
    rm -rf "$tmp"
    return 1
  fi
  mv "$tmp/digits.csv.gz" "$dest"
  rm -rf "$tmp"
  echo "tessera: fetched $dest (from the $pkg package)" >&2
  echo "$dest"
}
