#include <hwloc.h>

#include <algorithm>
#include <string>

#include "algorithms/kernels/isa.h"
#include "build_info.h"
#include "tools/info/info.h"

namespace tsr::tools::info {
namespace {

std::string yesNo(bool b) { return b ? "yes" : "no"; }

bool on(const char* cmakeBool) {
  const std::string v = cmakeBool;
  return v == "ON" || v == "1" || v == "TRUE" || v == "YES";
}

// The kernels built for the CPU, and which of them this CPU runs.
std::string cpuKernels() {
  if (!TSR_INFO_X86_KERNELS) return "portable only (not an x86 build)";
  const bool avx2 = kernels::bestIsa() == kernels::Isa::kAvx2;
  return std::string("portable, AVX2, F16C casts; this CPU: AVX2 ") + yesNo(avx2) + ", F16C " +
         yesNo(kernels::cpuHasF16c()) + "; active: " + kernels::isaName(kernels::activeIsa());
}

// hwloc encodes versions as 0xMMmmrr.
std::string hwlocVersion(unsigned v) {
  return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." + std::to_string(v & 0xff);
}

}  // namespace

std::string row(const std::string& label, const std::string& value) {
  std::string padded = "  " + label + ":";
  padded.resize(std::max<size_t>(padded.size() + 1, 22), ' ');
  return padded + value + "\n";
}

std::string versionLine() { return "tsr-info (Tessera) " TSR_INFO_VERSION; }

std::string renderBuild() {
  std::string s = "Tessera " TSR_INFO_VERSION "\n";
  s += "Build:\n";
  s += row("build type", TSR_INFO_BUILD_TYPE);
  s += row("compiler", TSR_INFO_COMPILER);
  s += row("CUDA", on(TSR_INFO_CUDA) ? "on (architectures " TSR_INFO_CUDA_ARCHITECTURES ")" : "off");
  s += row("sanitizers", on(TSR_INFO_SANITIZE) ? "address, undefined" : "off");
  s += row("CPU kernels", cpuKernels());
  return s;
}

std::string renderLibraries() {
  // hwloc's run-time figure is the library's API version, which lags its release number.
  return "Libraries:\n" + renderUcx() +
         row("hwloc", std::string(HWLOC_VERSION) + " (headers); library API " + hwlocVersion(hwloc_get_api_version()));
}

}  // namespace tsr::tools::info
