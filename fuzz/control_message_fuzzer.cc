// A peer's control message (abort notice or goodbye) as progress_failures.cc receives it: up
// to kControlBytes of anything, from a rank that may be broken or hostile.
#include <cstdint>
#include <cstring>

#include "runtime/control_message.h"

using namespace tsr::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kControlBytes) return 0;  // the receive buffer is that big: UCX truncates the rest
  const char* text = reinterpret_cast<const char*>(data);
  if (size == sizeof(kGoodbye) - 1 && std::memcmp(text, kGoodbye, size) == 0) return 0;
  FailedSeqs failed;
  tsr::Status s = decodeControl(text, size, 7, &failed);
  // What the engine then relies on: an error, and a failed range that makes sense.
  if (s.isOk()) __builtin_trap();
  if (failed.any() && failed.last < failed.first) __builtin_trap();
  // Relaying it again must give the same notice.
  FailedSeqs again;
  std::string relayed = encodeControl(s, failed);
  tsr::Status s2 = decodeControl(relayed.data(), relayed.size(), 9, &again);
  if (s2.code() != s.code() || s2.message() != s.message()) __builtin_trap();
  return 0;
}
