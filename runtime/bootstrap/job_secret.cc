#include "runtime/bootstrap/job_secret.h"

#include <sys/stat.h>

#include <cstdio>

#include "base/bounded_file.h"

namespace tsr::runtime {

namespace {

Status invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

std::string modeText(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", mode & 07777);
  return text;
}

}  // namespace

Result<std::string> readSecretFile(const std::string& path) {
  const std::string what = "TSR_JOB_SECRET_FILE";
  // The mode is checked on the path before reading: a secret others could read is no secret,
  // and saying so is better than using it.
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
    // A FIFO with no writer would block the read (creation) for good; a device is no secret.
    return invalid(what + " '" + path + "' is not a regular file (" +
                   (S_ISDIR(info.st_mode)    ? "a directory"
                    : S_ISFIFO(info.st_mode) ? "a FIFO"
                                             : "a device or socket") +
                   "): the secret is one line in a file of mode 0600");
  if (stat(path.c_str(), &info) == 0 && (info.st_mode & 077) != 0)
    return invalid(what + " '" + path + "' has mode " + modeText(info.st_mode) +
                   ": other users may read or change it; make it 0600 or stricter (chmod 600 '" + path + "')");
  TSR_ASSIGN_OR_RETURN(std::string text, readBoundedFile(path, kMaxSecretFileBytes, what));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.find('\n') != std::string::npos)
    return invalid(what + " '" + path + "' has more than one line; the secret is one line");
  return text;
}

Status checkJobSecret(const std::string& secret, bool insecure, int worldSize) {
  if (worldSize <= 1 || (secret.empty() && insecure)) return Status::ok();
  if (secret.empty())
    return invalid("a job of " + std::to_string(worldSize) +
                   " ranks needs a job secret, or anyone who reaches its bootstrap ports can join it: set "
                   "TSR_JOB_SECRET to the same random string (16 bytes or more, e.g. `openssl rand -hex 32`) on "
                   "every rank, or TSR_JOB_SECRET_FILE to a file holding it (mode 0600, on a file system every "
                   "host sees); tsrun sets one itself. TSR_INSECURE=1 runs without authentication (trusted "
                   "networks only)");
  if (secret.size() < kMinSecretBytes)
    return invalid("the job secret has " + std::to_string(secret.size()) + " bytes; it needs " +
                   std::to_string(kMinSecretBytes) + " or more (e.g. `openssl rand -hex 32`)");
  return Status::ok();
}

Result<JobSecret> jobSecretFromEnv(const EnvMap& env, int worldSize) {
  JobSecret out;
  auto insecure = env.find("TSR_INSECURE");
  out.insecure = insecure != env.end() && insecure->second == "1";
  auto given = env.find("TSR_JOB_SECRET");
  auto file = env.find("TSR_JOB_SECRET_FILE");
  if (given != env.end() && !given->second.empty()) {
    out.secret = given->second;
  } else if (file != env.end() && !file->second.empty()) {
    auto read = readSecretFile(file->second);
    if (!read.isOk()) return read.status();
    out.secret = read.take();
    if (out.secret.empty()) return invalid("TSR_JOB_SECRET_FILE '" + file->second + "' is empty");
  }
  TSR_RETURN_IF_ERROR(checkJobSecret(out.secret, out.insecure, worldSize));
  return out;
}

}  // namespace tsr::runtime
