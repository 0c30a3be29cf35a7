#include "tools/common/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace tsr::tools {

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The factor of a unit, or 0 for none. Lower case is taken as nccl-tests takes it (8k, 1m);
// "KIB" is KiB in upper case.
double factorOf(std::string_view unit) {
  const std::string u = upper(unit);
  if (u.empty() || u == "B") return 1;
  static constexpr char kPrefixes[] = "KMGT";
  for (int i = 0; i < 4; ++i) {
    const std::string p(1, kPrefixes[i]);
    if (u == p || u == p + "IB") return std::ldexp(1.0, 10 * (i + 1));
    if (u == p + "B") return std::pow(1000.0, i + 1);
  }
  return 0;
}

}  // namespace

Result<size_t> parseByteSize(std::string_view text, std::string_view option) {
  const std::string what = std::string(option) + " " + std::string(text);
  const std::string s(text);
  // A decimal number: strtod's other forms (-1, inf, nan, 0x10, leading blanks) are no sizes.
  const size_t digits = s.find_first_not_of("0123456789.eE+-");
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.'))
    return Status(Code::kInvalidArgument, what + ": not a size (" + kByteSizeHelp + ")");
  const char* begin = s.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin || (digits != std::string::npos && begin + digits < end))
    return Status(Code::kInvalidArgument, what + ": not a size (" + kByteSizeHelp + ")");
  std::string_view unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  const double factor = factorOf(unit);
  if (factor == 0 || !(value >= 0) || std::isinf(value))  // NaN fails value >= 0
    return Status(Code::kInvalidArgument, what + ": not a size (" + kByteSizeHelp + ")");
  const double bytes = value * factor;
  if (bytes > static_cast<double>(kMaxByteSize))
    return Status(Code::kInvalidArgument, what + ": too large (at most 1T, 2^40 bytes)");
  return static_cast<size_t>(bytes);
}

}  // namespace tsr::tools
