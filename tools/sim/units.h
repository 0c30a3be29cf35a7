// Quantities on tsr-sim's command line: rates ("1Gbps", "12.5GBps", "800MB/s") and times
// ("20us", "1.5ms"). Rates come back in bytes per second. Sizes are read as every tool reads
// them: tools/common/byte_size.h.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace tsr::sim {

// Bytes per second: bps/Kbps/Mbps/Gbps (bits), Bps/KBps/MBps/GBps or B/s, KB/s, ... (bytes);
// a bare number is bytes per second.
Result<double> parseRate(const std::string& text);
// Seconds: s, ms, us, ns; a bare number is seconds.
Result<double> parseTime(const std::string& text);

// "64 MiB", "1.25 GB/s", "20.0 us": for reports.
std::string formatBytes(double bytes);
std::string formatRate(double bytesPerSec);
std::string formatTime(double seconds);

}  // namespace tsr::sim
