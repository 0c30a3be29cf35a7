// The progress engine's control messages, as text: an abort notice is
// "<code>\n<last seq of the failed collective>\n<message>"; the goodbye is its own word, sent
// when a rank destroys its communicator so peers do not mistake its exit for a failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace tsr::runtime {

inline constexpr size_t kControlBytes = 4096;
inline constexpr char kGoodbye[] = "goodbye";

std::string encodeControl(const Status& reason, int64_t failedSeq);
// A notice from rank `from`; names that rank unless it relays one that already names its
// first reporter. Malformed text becomes an abort carrying the text.
Status decodeControl(const char* data, size_t bytes, int from, int64_t* failedSeq);

}  // namespace tsr::runtime
