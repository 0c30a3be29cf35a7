#include "base/status.h"

namespace tsr {

const char* codeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "TSR_OK";
    case Code::kInProgress:
      return "TSR_IN_PROGRESS";
    case Code::kNotSupported:
      return "TSR_ERR_NOT_SUPPORTED";
    case Code::kInvalidArgument:
      return "TSR_ERR_INVALID_ARGUMENT";
    case Code::kMismatch:
      return "TSR_ERR_MISMATCH";
    case Code::kPeerFailed:
      return "TSR_ERR_PEER_FAILED";
    case Code::kTimeout:
      return "TSR_ERR_TIMEOUT";
    case Code::kBootstrap:
      return "TSR_ERR_BOOTSTRAP";
    case Code::kTransport:
      return "TSR_ERR_TRANSPORT";
    case Code::kAborted:
      return "TSR_ERR_ABORTED";
    case Code::kInternal:
      return "TSR_ERR_INTERNAL";
    case Code::kNumericError:
      return "TSR_ERR_NUMERIC";
    case Code::kRevoked:
      return "TSR_ERR_REVOKED";
  }
  return "TSR_ERR_UNKNOWN";
}

std::string Status::toString() const {
  if (message_.empty()) return codeName(code_);
  return std::string(codeName(code_)) + ": " + message_;
}

}  // namespace tsr
