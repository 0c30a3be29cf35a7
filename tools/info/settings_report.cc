#include <map>
#include <string>

#include "algorithms/compress/registry.h"
#include "tools/info/info.h"

namespace tsr::tools::info {
namespace {

using runtime::ConfigEntry;
using runtime::ValueKind;

constexpr size_t kWidth = 100;
const std::string kIndent = "    ";

std::string acceptedText(const ConfigEntry& e) {
  if (e.kind == ValueKind::kInt) return std::string("an integer in ") + e.accepted;
  if (e.kind == ValueKind::kEnum) return std::string("one of ") + e.accepted;
  return e.accepted;  // free text, possibly empty
}

// `text` in lines of at most kWidth columns (a longer word gets a line of its own).
std::string wrap(const std::string& text) {
  std::string out, line = kIndent;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    const bool first = line.size() == kIndent.size();
    if (!first && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = kIndent;
    }
    line += (line.size() == kIndent.size() ? "" : " ") + word;
  }
  return out + line + "\n";
}

}  // namespace

SettingsReport renderSettings(const runtime::EnvMap& env) {
  SettingsReport r;
  r.text = "Settings (NAME=current value; where it comes from, the default, accepted values; meaning):\n";
  runtime::Config check;  // validates each environment value as the runtime would
  // The compressor variables have a grammar together (k is a count for topk, levels for
  // dithering; scale_block only for onebit): checked as a compressor built from them would be.
  std::map<std::string, std::string> compressEnv;
  for (const auto& [name, value] : env)
    if (name.rfind("TSR_COMPRESS_", 0) == 0) compressEnv[name] = value;
  Status compress = compress::checkEnvironment(compressEnv);
  bool compressNamed = compress.isOk();
  for (const ConfigEntry& e : runtime::configTable()) {
    auto it = env.find(e.name);
    const std::string dflt = *e.defaultValue ? e.defaultValue : "none";
    std::string value, note;
    if (it == env.end()) {
      value = e.defaultValue;
      note = *e.defaultValue ? "default" : "not set, no default";
    } else {
      value = it->second;
      note = "environment; default " + dflt;
      Status st = check.set(e.name, value);
      if (!compress.isOk() && compress.message().find("(from " + std::string(e.name) + "=") != std::string::npos) {
        if (st.isOk()) st = compress;
        compressNamed = true;
      }
      if (!st.isOk()) {
        note = "INVALID, the runtime refuses it: " + st.message() + "; default " + dflt;
        ++r.invalid;
      }
      if (std::string(e.name) == runtime::kJobSecretVariable) value = "<set, not shown>";
    }
    const std::string accepted = acceptedText(e);
    r.text += std::string(e.name) + "=" + value + "  (" + note + (accepted.empty() ? "" : "; " + accepted) + ")\n";
    r.text += wrap(e.description);
  }

  if (!compressNamed) {  // not one variable's fault (or one the table already refused)
    r.text += "TSR_COMPRESS_* together: INVALID, the runtime refuses them: " + compress.message() + "\n";
    ++r.invalid;
  }

  std::string unknown;
  for (const auto& [name, value] : env) {
    if (name.rfind("TSR_", 0) != 0) continue;
    bool known = false;
    for (const ConfigEntry& e : runtime::configTable()) known = known || name == e.name;
    if (known) continue;
    const std::string hint = runtime::closestConfigName(name);
    unknown += "  " + name + (hint.empty() ? "" : " (did you mean " + hint + "?)") + "\n";
  }
  if (!unknown.empty()) r.text += "TSR_ variables in the environment that are not settings:\n" + unknown;
  return r;
}

}  // namespace tsr::tools::info
