#include "runtime/control_message.h"

#include <cstdlib>

namespace tsr::runtime {

std::string encodeControl(const Status& s, FailedSeqs failed) {
  return std::to_string(static_cast<int>(s.code())) + "\n" + std::to_string(failed.first) + ":" +
         std::to_string(failed.last) + "\n" + s.message();
}

Status decodeControl(const char* data, size_t bytes, int from, FailedSeqs* failed) {
  std::string text(data, bytes);
  size_t first = text.find('\n');
  size_t second = first == std::string::npos ? first : text.find('\n', first + 1);
  int code = static_cast<int>(Code::kAborted);
  *failed = FailedSeqs{};
  std::string message = text;
  if (second != std::string::npos) {
    code = std::atoi(text.c_str());
    const char* seqs = text.c_str() + first + 1;
    char* end = nullptr;
    failed->first = std::strtoll(seqs, &end, 10);
    failed->last = *end == ':' ? std::strtoll(end + 1, nullptr, 10) : failed->first;
    if (failed->first < 0 || failed->last < failed->first) *failed = FailedSeqs{};
    message = text.substr(second + 1);
  }
  if (code <= static_cast<int>(Code::kNotSupported) || code > static_cast<int>(Code::kRevoked))
    code = static_cast<int>(Code::kAborted);
  // A relayed notice already names the rank that reported it first.
  if (message.find(" [reported by rank ") != std::string::npos) return Status(static_cast<Code>(code), message);
  return Status(static_cast<Code>(code), message + " [reported by rank " + std::to_string(from) + "]");
}

}  // namespace tsr::runtime
