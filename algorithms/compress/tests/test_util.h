#pragma once

#include <cstddef>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/compress/registry.h"

namespace tsr::compress::testing {

inline std::vector<float> randomTensor(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> x(n);
  for (float& v : x) v = dist(gen);
  return x;
}

// 8-byte aligned byte buffer.
struct Buffer {
  explicit Buffer(size_t bytes) : words((bytes + 7) / 8 + 1) {}
  std::span<std::byte> span() { return {reinterpret_cast<std::byte*>(words.data()), words.size() * 8}; }
  std::vector<uint64_t> words;
};

inline std::unique_ptr<Compressor> make(const Params& p, size_t n) {
  auto r = createCompressor(p, n);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? r.take() : nullptr;
}

// compress + decompress through caller buffers; returns the decompressed tensor.
inline std::vector<float> roundTrip(Compressor& c, const std::vector<float>& x, size_t* bytesOut = nullptr) {
  Buffer buf(c.maxCompressedBytes());
  auto bytes = c.compress(x, buf.span());
  EXPECT_TRUE(bytes.isOk()) << bytes.status().toString();
  if (!bytes.isOk()) return {};
  EXPECT_LE(bytes.value(), c.maxCompressedBytes());
  if (bytesOut) *bytesOut = bytes.value();
  std::vector<float> out(x.size(), -1.0f);
  Status s = c.decompress(buf.span().first(bytes.value()), out);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out;
}

}  // namespace tsr::compress::testing
