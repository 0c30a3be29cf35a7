// Compressor parameters (registry.h) as a user writes them, "compressor=topk,k=0.01,ef=vanilla"
// (key=value pairs split on ',' and '=', as tsr-bench and the bindings hand them over), for a
// tensor size taken from the input. An accepted set must give a compressor whose own payload
// decompresses.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/compress/registry.h"

using namespace tsr::compress;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t count = (size_t{data[0]} << 8 | data[1]) % 4097;  // tensors up to 16 KiB here
  std::string text(reinterpret_cast<const char*>(data) + 2, size - 2);
  Params params;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    size_t eq = item.find('=');
    if (eq == std::string::npos) return 0;  // the callers reject a pair without '='
    params[item.substr(0, eq)] = item.substr(eq + 1);
    pos = comma + 1;
  }
  auto made = createCompressor(params, count);
  if (!made.isOk()) return 0;
  Compressor& c = *made.value();
  (void)c.name();
  std::vector<float> g(count), out(count);
  for (size_t i = 0; i < count; ++i) g[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.25f;
  std::vector<uint64_t> payload((c.maxCompressedBytes() + 7) / 8 + 1);
  auto bytes = reinterpret_cast<std::byte*>(payload.data());
  auto written = c.compress(g, {bytes, c.maxCompressedBytes()});
  if (!written.isOk() || written.value() > c.maxCompressedBytes()) __builtin_trap();
  if (!c.decompress({bytes, written.value()}, out).isOk()) __builtin_trap();
  return 0;
}
