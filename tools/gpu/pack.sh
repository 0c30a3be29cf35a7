#!/bin/bash
# Packs what tools/gpu/device_check.sh runs on a GPU machine into gpu-kit/ (ignored by git),
# for the device tool's `carry` (docs/gpu.md):
#   bin/   the CUDA build's test binaries and tools, stripped
#   lib/   libtessera, the CUDA runtime it was linked with, and the shared libraries from
#          Debian's packages that the binaries need beyond glibc and libstdc++ (apt-get download
#          + dpkg -x of the installed versions), with UCX's cma module in lib/ucx/
#   ucx-cuda/  optional: UCX 1.13.1 built with CUDA by tools/gpu/build_ucx_cuda.sh, once it
#          has finished (UCX_CUDA_PREFIX, default /tmp/tsr-ucx-cuda/dest/opt/tsr-ucx-cuda)
#   data/fashion-mnist/  the first 4096 training and 1000 test images of Debian's
#          dataset-fashion-mnist, for the example's run on CUDA (torch-example-cuda)
#   MANIFEST.txt  commit, build folder, architectures, packages, files and sizes
# Then it verifies the kit (device_check.sh --verify-only).
#
# usage: tools/gpu/pack.sh [--build DIR] [--kit DIR] [--no-build]
#   --no-build: take the binaries as they are (default: build the needed targets first)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
KIT=$ROOT/gpu-kit
DO_BUILD=1
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --kit) KIT=$2; shift 2 ;;
    --no-build) DO_BUILD=0; shift ;;
    *) echo "usage: $0 [--build DIR] [--kit DIR] [--no-build]" >&2; exit 2 ;;
  esac
done
UCX_CUDA_PREFIX=${UCX_CUDA_PREFIX:-/tmp/tsr-ucx-cuda/dest/opt/tsr-ucx-cuda}

# What device_check.sh runs. Test binaries first, then the tools.
TESTS="kernels_cuda_tests device_kernels_tests c_api_device_tests c_api_tests device_staging_tests dense_device_tests"
TOOLS="tsrun tsr-gpu-check tsr-device-kernel-bench"
# Libraries every machine that runs these has (glibc, the compiler runtime, the GPU driver's).
BASE_LIBS="linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libgcc_s.so.1 libstdc++.so.6 libcuda.so.1 libnvidia-ml.so.1"

grep -q '^TSR_CUDA_ARCHITECTURES' "$BUILD/CMakeCache.txt" 2>/dev/null || {
  echo "pack.sh: $BUILD is not a CUDA build of this tree (configure with nvcc in /usr/local/cuda: docs/gpu.md)" >&2
  exit 1
}
ARCHS=$(sed -n 's/^TSR_CUDA_ARCHITECTURES:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
case ";$ARCHS;" in *";90;"*|*";90a;"*) ;; *) echo "pack.sh: note: no sm_90 machine code ($ARCHS): Hopper will JIT the PTX at start-up" >&2 ;; esac
if [ $DO_BUILD = 1 ]; then
  nice -n 10 cmake --build "$BUILD" --target tessera $TESTS $TOOLS
fi

rm -rf "$KIT"
mkdir -p "$KIT/bin" "$KIT/lib/ucx"
for b in $TESTS $TOOLS; do
  [ -f "$BUILD/bin/$b" ] || { echo "pack.sh: missing $BUILD/bin/$b" >&2; exit 1; }
  strip --strip-all -o "$KIT/bin/$b" "$BUILD/bin/$b"
done
# Under its SONAME (libtessera.so.MAJOR.MINOR), the name the binaries ask for.
tessera_so=$(objdump -p "$BUILD/lib/libtessera.so" | awk '/SONAME/ {print $2}')
strip --strip-unneeded -o "$KIT/lib/$tessera_so" "$BUILD/lib/$tessera_so"
# The generated header the torch backend's sources include (built there: build_torch_ext.py).
mkdir -p "$KIT/include/tessera"
cp "$BUILD/bindings/c/include/tessera/tessera_version.h" "$KIT/include/tessera/"

# Every library the binaries resolve here that is not a base library: from the CUDA toolkit
# (copied) or from a Debian package (downloaded and unpacked).
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
declare -A PKGS=()
for f in "$KIT"/bin/* "$KIT/lib/$tessera_so"; do
  LD_LIBRARY_PATH="$KIT/lib" ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u > "$TMP/needed"
while read -r soname path; do
  case " $BASE_LIBS " in *" $soname "*) continue ;; esac
  [ -e "$KIT/lib/$soname" ] && continue
  real=$(readlink -f "$path")
  case $real in
    /usr/local/cuda*|*/cuda/*) cp -L "$path" "$KIT/lib/$soname"; echo "$soname cuda-toolkit $real" >> "$TMP/origin"; continue ;;
  esac
  pkg=
  for cand in "$path" "$real" "/usr$path" "${path#/usr}" "/usr$real" "${real#/usr}"; do
    pkg=$(dpkg -S "$cand" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$pkg" ] && break
  done
  [ -n "$pkg" ] || { echo "pack.sh: no Debian package owns $path ($soname)" >&2; exit 1; }
  PKGS[$pkg]=1
  echo "$soname $pkg" >> "$TMP/origin"
done < "$TMP/needed"

mkdir -p "$TMP/debs" "$TMP/x"
for pkg in "${!PKGS[@]}"; do
  # The installed version; when the archive no longer has it (a security update replaced it),
  # the candidate of the same package (same soname).
  ver=$(dpkg-query -W -f '${Version}' "$pkg")
  if (cd "$TMP/debs" && apt-get download -q "$pkg=$ver" >/dev/null 2>&1); then
    echo "$pkg $ver" >> "$TMP/packages"
  elif (cd "$TMP/debs" && apt-get download -q "$pkg" >/dev/null 2>&1); then
    echo "$pkg $(dpkg-deb -f "$TMP"/debs/"${pkg}"_*.deb Version) (installed: $ver, no longer in the archive)" >> "$TMP/packages"
  else
    echo "pack.sh: apt-get download $pkg failed (apt-get update first?)" >&2; exit 1
  fi
done
for deb in "$TMP"/debs/*.deb; do dpkg -x "$deb" "$TMP/x"; done
while read -r soname origin _; do
  [ "$origin" = cuda-toolkit ] && continue
  src=$(find "$TMP/x" -name "$soname" \( -type f -o -type l \) | head -1)
  [ -n "$src" ] || { echo "pack.sh: $soname not found in package $origin" >&2; exit 1; }
  strip --strip-unneeded -o "$KIT/lib/$soname" "$(readlink -f "$src")"
done < "$TMP/origin"
# UCX loads its transports as modules from lib/ucx beside libucs (same suffix as libucs's name).
if [ -e "$KIT/lib/libucs.so.0" ]; then
  src=$(find "$TMP/x" -path '*/ucx/libuct_cma.so.0*' -type f | head -1)
  [ -n "$src" ] && strip --strip-unneeded -o "$KIT/lib/ucx/libuct_cma.so.0" "$src"
fi

# Optional: UCX with CUDA (the direct device path), when build_ucx_cuda.sh has installed it.
if [ -f "$UCX_CUDA_PREFIX/BUILD-INFO.txt" ] && [ -f "$UCX_CUDA_PREFIX/lib/ucx/libuct_cuda.so.0" ]; then
  mkdir -p "$KIT/ucx-cuda/lib/ucx" "$KIT/ucx-cuda/bin"
  for l in libucp libuct libucs libucm; do
    strip --strip-unneeded -o "$KIT/ucx-cuda/lib/$l.so.0" "$(readlink -f "$UCX_CUDA_PREFIX/lib/$l.so.0")"
  done
  for m in libuct_cuda libucm_cuda libuct_cma; do
    [ -f "$UCX_CUDA_PREFIX/lib/ucx/$m.so.0" ] &&
      strip --strip-unneeded -o "$KIT/ucx-cuda/lib/ucx/$m.so.0" "$(readlink -f "$UCX_CUDA_PREFIX/lib/ucx/$m.so.0")"
  done
  strip --strip-all -o "$KIT/ucx-cuda/bin/ucx_info" "$UCX_CUDA_PREFIX/bin/ucx_info"
  cp "$UCX_CUDA_PREFIX/BUILD-INFO.txt" "$KIT/ucx-cuda/"
fi

# A part of Fashion-MNIST for examples/torch/train_fashion_mnist.py --device cuda (the GPU
# machine has no package registry): the idx files cut to their first images, gzipped again.
FMNIST=/usr/share/datasets/fashion-mnist
if [ -f "$FMNIST/train-images-idx3-ubyte.gz" ]; then
  mkdir -p "$KIT/data/fashion-mnist"
  python3 - "$FMNIST" "$KIT/data/fashion-mnist" <<'EOF'
import gzip, os, struct, sys
src, dst = sys.argv[1:3]
for prefix, count in (("train", 4096), ("t10k", 1000)):
    for kind in ("images-idx3", "labels-idx1"):
        name = f"{prefix}-{kind}-ubyte.gz"
        with gzip.open(os.path.join(src, name)) as f:
            magic, = struct.unpack(">I", f.read(4))
            dims = list(struct.unpack(">" + "I" * (magic & 0xFF), f.read(4 * (magic & 0xFF))))
            item = 1
            for d in dims[1:]:
                item *= d
            body = f.read(count * item)
        dims[0] = count
        with gzip.open(os.path.join(dst, name), "wb") as g:
            g.write(struct.pack(">I", magic) + struct.pack(">" + "I" * len(dims), *dims) + body)
EOF
fi

{
  echo "# gpu-kit made by tools/gpu/pack.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit $(git -C "$ROOT" rev-parse HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . ':!gpu-kit' 2>/dev/null || echo ' (with local changes)')"
  echo "build $BUILD (CUDA architectures $ARCHS)"
  echo "cuda $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "tests $TESTS"
  echo "tools $TOOLS"
  sed 's/^/package /' "$TMP/packages" | sort
  sed 's/^/library /' "$TMP/origin" | sort
  (cd "$KIT" && find . -type f ! -name MANIFEST.txt -printf 'file %P %s\n' | sort)
  echo "total $(du -sb "$KIT" | cut -f1) bytes"
} > "$KIT/MANIFEST.txt"
echo "pack.sh: $KIT: $(du -sh "$KIT" | cut -f1) ($(find "$KIT" -type f | wc -l) files)"
bash "$ROOT/tools/gpu/device_check.sh" --verify-only --kit "$KIT"
