// The job secret: the HMAC key that keeps strangers out of a job's bootstrap (wire.h).
//
// Where it comes from, first match wins: TSR_JOB_SECRET (tsrun sets it), then
// TSR_JOB_SECRET_FILE (a file every rank reads, mode 0600 or stricter: the way to share one
// under Open MPI, Slurm or torchrun). A job of several ranks without one refuses to start
// unless TSR_INSECURE=1 says the network is trusted; a secret shorter than kMinSecretBytes is
// refused always. A one-rank job opens no socket and needs none.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"
#include "runtime/bootstrap/launch_env.h"

namespace tsr::runtime {

constexpr size_t kMinSecretBytes = 16;
constexpr size_t kMaxSecretFileBytes = 4096;

struct JobSecret {
  std::string secret;     // empty only when insecure
  bool insecure = false;  // TSR_INSECURE=1
};

// Reads the secret for a job of `worldSize` ranks from `env` (the file, if named, is read
// here). Errors are kInvalidArgument and name the variable and what to set instead.
Result<JobSecret> jobSecretFromEnv(const EnvMap& env, int worldSize);

// Ok when a job of `worldSize` ranks may start with `secret` (TSR_INSECURE=1 allows an empty one).
Status checkJobSecret(const std::string& secret, bool insecure, int worldSize);

// The secret in a file: no access for group or others, at most kMaxSecretFileBytes, one line
// (a trailing newline is not part of it).
Result<std::string> readSecretFile(const std::string& path);

}  // namespace tsr::runtime
