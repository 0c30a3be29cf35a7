// The progress engine's control messages, as text: an abort notice is
// "<code>\n<first seq>:<last seq> of the failed collective\n<message>" (-1:-1 when no collective
// in particular failed); the goodbye is its own word, sent when a rank destroys its
// communicator so peers do not mistake its exit for a failure. Each travels sealed
// (control_auth.h): a receiver acts only on one that carries the communicator's MAC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "runtime/control_auth.h"

namespace tsr::runtime {

inline constexpr size_t kControlBytes = 4096;  // on the wire, sealed (control_auth.h)
inline constexpr size_t kControlBodyBytes = kControlBytes - kControlOverhead;
inline constexpr char kGoodbye[] = "goodbye";

// The sequence numbers of the collective that failed (a custom task may take several).
struct FailedSeqs {
  int64_t first = -1;
  int64_t last = -1;
  bool any() const { return first >= 0; }
};

std::string encodeControl(const Status& reason, FailedSeqs failed);
// A notice from rank `from`; names that rank unless it relays one that already names its
// first reporter. Malformed text becomes an abort carrying the text.
Status decodeControl(const char* data, size_t bytes, int from, FailedSeqs* failed);

}  // namespace tsr::runtime
