// Quantities on tsr-sim's command line: sizes ("64MiB", "4k"), rates ("1Gbps", "12.5GBps",
// "800MB/s") and times ("20us", "1.5ms"). Rates come back in bytes per second.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace tsr::sim {

// Bytes: a number with an optional unit: B, k/K/KB (1e3), KiB (2^10), M/MB, MiB, G/GB, GiB.
Result<size_t> parseBytes(const std::string& text);
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
