// Sizes on the tools' command lines (tsr-bench -b/-e; tsr-sim --size, --chunk, --min-message),
// read by one parser so the same text is the same number of bytes in every tool:
//   4096, 4096B              bytes
//   4K, 4M, 4G, 4T           powers of 1024, in either case (4k = 4096): the suffixes of
//                            nccl-tests and the MPI benchmarks
//   4KiB, 4MiB, 4GiB, 4TiB   powers of 1024 (IEC)
//   4KB, 4MB, 4GB, 4TB       powers of 1000 (SI), for whoever means them
// A fraction is rounded down to whole bytes (1.5K = 1536, 1e-3 = 0).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tsr::tools {

// The largest size the tools take: the runtime's count limit (2^40 elements) in bytes of the
// smallest element, well past any buffer a machine holds.
constexpr size_t kMaxByteSize = size_t{1} << 40;

// Errors name the option and the text: "--size 12furlongs: not a size (...)".
Result<size_t> parseByteSize(std::string_view text, std::string_view option);

// The accepted forms in a few words, for --help texts.
inline constexpr const char* kByteSizeHelp = "bytes, or K/M/G/T or KiB/MiB/GiB/TiB (x1024), KB/MB/GB/TB (x1000)";

}  // namespace tsr::tools
