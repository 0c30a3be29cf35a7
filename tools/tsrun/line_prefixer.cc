#include "tools/tsrun/line_prefixer.h"

namespace tsr::tools::tsrun {

LinePrefixer::LinePrefixer(int rank) {
  prefix_.reserve(16);
  prefix_.push_back('[');
  prefix_.append(std::to_string(rank));
  prefix_.append("] ");
}

std::string LinePrefixer::feed(std::string_view data) {
  std::string out;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string_view::npos) {
      pending_.append(data.substr(pos));
      break;
    }
    out += prefix_;
    out += pending_;
    out.append(data.substr(pos, nl + 1 - pos));
    pending_.clear();
    pos = nl + 1;
  }
  while (pending_.size() >= kMaxLine) {
    out += prefix_;
    out.append(pending_, 0, kMaxLine);
    out += '\n';
    pending_.erase(0, kMaxLine);
  }
  return out;
}

std::string LinePrefixer::finish() {
  if (pending_.empty()) return {};
  std::string out = prefix_ + pending_ + "\n";
  pending_.clear();
  return out;
}

}  // namespace tsr::tools::tsrun
