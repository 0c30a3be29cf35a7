// Status: the one error currency of Tessera's C++ layers.
//
// InProgress and NotSupported are not failures: a request that is still running says
// InProgress, and an algorithm that cannot serve an input says NotSupported so the caller can
// try the next one. Everything else names what went wrong (rank, peer, operation) in message().
#pragma once

#include <string>
#include <utility>

namespace tsr {

// Values match the C API's tsr_status_t one to one (bindings/c/include/tessera/tessera.h).
enum class Code : int {
  kOk = 0,
  kInProgress = 1,
  kNotSupported = 2,
  kInvalidArgument = 3,
  kMismatch = 4,
  kPeerFailed = 5,
  kTimeout = 6,
  kBootstrap = 7,
  kTransport = 8,
  kAborted = 9,
  kInternal = 10,
  kNumericError = 11,
  kRevoked = 12,  // a rank revoked the communicator (Communicator::revoke): it is to be shrunk
};

const char* codeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool isOk() const { return code_ == Code::kOk; }
  // True for real failures: not Ok, not InProgress, not NotSupported.
  bool isError() const { return code_ != Code::kOk && code_ != Code::kInProgress && code_ != Code::kNotSupported; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string toString() const;
  void ignore() const {}

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT
  bool isOk() const { return status_.isOk(); }
  const Status& status() const { return status_; }
  T& value() { return value_; }
  const T& value() const { return value_; }
  T&& take() { return std::move(value_); }

 private:
  Status status_;
  T value_{};
};

}  // namespace tsr

#define TSR_CONCAT_INNER(a, b) a##b
#define TSR_CONCAT(a, b) TSR_CONCAT_INNER(a, b)

// Returns the status from the enclosing function when it is not Ok.
#define TSR_RETURN_IF_ERROR(expr)                \
  do {                                           \
    ::tsr::Status tsr_status_ = (expr);          \
    if (!tsr_status_.isOk()) return tsr_status_; \
  } while (0)

// TSR_ASSIGN_OR_RETURN(auto x, resultExpr);
#define TSR_ASSIGN_OR_RETURN(lhs, expr)                                                             \
  auto TSR_CONCAT(tsr_result_, __LINE__) = (expr);                                                  \
  if (!TSR_CONCAT(tsr_result_, __LINE__).isOk()) return TSR_CONCAT(tsr_result_, __LINE__).status(); \
  lhs = TSR_CONCAT(tsr_result_, __LINE__).take()

// Invariant check that prints both values; for conditions that mean a bug, not bad input.
#define TSR_CHECK_EQ(a, b)                                                                                          \
  do {                                                                                                              \
    if (!((a) == (b)))                                                                                              \
      return ::tsr::Status(::tsr::Code::kInternal, std::string(__FILE__ ":") + std::to_string(__LINE__) +           \
                                                       ": " #a " == " #b " failed (" + std::to_string(a) + " vs " + \
                                                       std::to_string(b) + ")");                                    \
  } while (0)
