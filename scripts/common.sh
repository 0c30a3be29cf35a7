# Shared by run.sh and test.sh: install what is missing, configure, build.
# Sourced, not run. Uses apt-get only when a package is missing.

TSR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TSR_PACKAGES=(cmake ninja-build g++ pkg-config libucx-dev ucx-utils libhwloc-dev hwloc
              libboost-dev libspdlog-dev libfmt-dev libgtest-dev libssl-dev libcli11-dev
              iproute2)

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

# tsr_build DIR [cmake args...]: configure (once) and build everything in DIR.
tsr_build() {
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$TSR_ROOT" -B "$dir" -G Ninja "$@" >"$dir.configure.log" 2>&1 || {
      cat "$dir.configure.log"; echo "tessera: configure failed ($dir)"; return 1; }
  fi
  cmake --build "$dir" -j"$(nproc)"
}
