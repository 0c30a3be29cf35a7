#!/bin/bash
# Builds Debian's UCX (the source package of the installed libucx0, 1.13.1 on bookworm) with
# CUDA support against the toolkit in /usr/local/cuda, for the GPU kit's optional direct device
# path (tools/gpu/pack.sh copies it into gpu-kit/ucx-cuda; docs/gpu.md).
#
# Needs: deb-src access (a temporary sources list in WORK, not the system's), autoconf,
# automake, libtool and a C compiler. UCX's cuda_ipc needs nvml.h and libnvidia-ml, which
# neither the CUDA toolkit here nor a Debian main package has: unless NVML_INCLUDE names a
# folder holding NVIDIA's nvml.h, the script writes the few NVML declarations UCX 1.13 uses
# (the public ABI of those calls and of nvmlFieldValue_t), and a link-time libnvidia-ml stub in
# either case (the driver's libnvidia-ml.so.1 serves at run time).
# Only UCX's libraries, its modules and ucx_info are built: its test/apps/test_cuda_hook.c does
# not compile against CUDA 13 (cuCtxCreate takes a CUctxCreateParams* since CUDA 13).
#
# usage: tools/gpu/build_ucx_cuda.sh [WORK]   (default WORK /tmp/tsr-ucx-cuda)
# Result: WORK/dest/opt/tsr-ucx-cuda/{lib,bin} (pack.sh's default UCX_CUDA_PREFIX).
set -euo pipefail
WORK=${1:-/tmp/tsr-ucx-cuda}
CUDA=${CUDA:-/usr/local/cuda}
VERSION=$(dpkg-query -W -f '${source:Upstream-Version}' libucx0)
mkdir -p "$WORK/lists/partial" "$WORK/nvml/lib"
cd "$WORK"
T0=$(date +%s)

if [ ! -d "ucx-$VERSION" ]; then
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" > sources.list
  o="-o Dir::Etc::SourceList=$WORK/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$WORK/lists"
  apt-get $o update -q > apt.log 2>&1
  apt-get $o source --download-only "ucx=$(dpkg-query -W -f '${source:Version}' libucx0)" >> apt.log 2>&1
  tar xf "ucx_$VERSION.orig.tar.xz"
  tar xf ucx_*.debian.tar.xz -C "ucx-$VERSION"
  (cd "ucx-$VERSION" && for p in $(grep -v '^#' debian/patches/series); do patch -p1 < "debian/patches/$p"; done) > patch.log
fi

if [ -z "${NVML_INCLUDE:-}" ]; then
  NVML_INCLUDE=$WORK/nvml/include
  mkdir -p "$NVML_INCLUDE"
  cat > "$NVML_INCLUDE/nvml.h" <<'EOF'
/* The NVML declarations UCX 1.13's cuda_ipc uses (NVML's public ABI), for building UCX without
 * NVIDIA's nvml.h. nvmlPciInfo_t is only passed to the library: a buffer larger than it. */
#ifndef TSR_MINIMAL_NVML_H
#define TSR_MINIMAL_NVML_H
typedef enum { NVML_SUCCESS = 0 } nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef enum { NVML_VALUE_TYPE_DOUBLE = 0, NVML_VALUE_TYPE_UNSIGNED_INT = 1 } nvmlValueType_t;
typedef union { double dVal; int siVal; unsigned int uiVal; unsigned long ulVal;
                unsigned long long ullVal; signed long long sllVal; unsigned short usVal; } nvmlValue_t;
typedef struct { unsigned int fieldId; unsigned int scopeId; long long timestamp; long long latencyUsec;
                 nvmlValueType_t valueType; nvmlReturn_t nvmlReturn; nvmlValue_t value; } nvmlFieldValue_t;
typedef struct { char opaque[256]; } nvmlPciInfo_t;
#define NVML_FI_DEV_NVLINK_LINK_COUNT 91
#define nvmlDeviceGetHandleByIndex nvmlDeviceGetHandleByIndex_v2
#define nvmlDeviceGetNvLinkRemotePciInfo nvmlDeviceGetNvLinkRemotePciInfo_v2
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char* nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values);
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci);
#endif
EOF
fi
# The link-time stub of the NVML calls UCX's cuda_ipc makes.
cat > nvml/stub.c <<'EOF'
int nvmlInit(void) { return 999; }  /* what configure looks for */
int nvmlInit_v2(void) { return 999; }
int nvmlShutdown(void) { return 999; }
const char* nvmlErrorString(int r) { (void)r; return "stub"; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void* d) { (void)i; (void)d; return 999; }
int nvmlDeviceGetFieldValues(void* d, int n, void* v) { (void)d; (void)n; (void)v; return 999; }
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* d, unsigned l, void* p) { (void)d; (void)l; (void)p; return 999; }
EOF
gcc -shared -fPIC -o nvml/lib/libnvidia-ml.so -Wl,-soname,libnvidia-ml.so.1 nvml/stub.c

cd "ucx-$VERSION"
[ -x configure ] || ./autogen.sh > ../autogen.log 2>&1
mkdir -p build-cuda && cd build-cuda
# Debian's options (debian/rules) less verbs, java and the examples; with CUDA.
../configure --prefix=/opt/tsr-ucx-cuda --with-cuda="$CUDA" --enable-mt --disable-backtrace-detail \
  --disable-logging --enable-cma --without-verbs --without-rdmacm --without-java --without-go \
  --disable-doxygen-doc --disable-examples --without-rocm --without-knem --without-xpmem --without-ugni \
  --disable-debug --enable-optimizations --disable-assertions --disable-params-check \
  CPPFLAGS="-I$NVML_INCLUDE" LDFLAGS="-L$WORK/nvml/lib" > ../../configure.log 2>&1
grep -q 'UCT modules:.*cuda' ../../configure.log || { echo "configure did not enable CUDA: $WORK/configure.log" >&2; exit 1; }
T1=$(date +%s)
rm -rf "$WORK/dest"
: > ../../make.log
for d in src/ucm src/ucs src/uct src/ucp src/tools/info; do
  make -C "$d" -j"$(nproc)" >> ../../make.log 2>&1
  make -C "$d" install DESTDIR="$WORK/dest" >> ../../make.log 2>&1
done
T2=$(date +%s)
P=$WORK/dest/opt/tsr-ucx-cuda
{
  echo "UCX $VERSION (Debian source $(dpkg-query -W -f '${source:Version}' libucx0)) with CUDA $("$CUDA"/bin/nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "configured and built in $((T1 - T0)) + $((T2 - T1)) s on $(nproc) cores, $(date -u +%Y-%m-%d)"
  grep -E 'UCT modules|UCM modules' ../../configure.log | sort -u
} > "$P/BUILD-INFO.txt"
cat "$P/BUILD-INFO.txt"
ls -la "$P/lib/ucx/"
