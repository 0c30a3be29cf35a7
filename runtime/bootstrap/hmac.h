// HMAC-SHA256 (RFC 2104 / FIPS 198) over OpenSSL's EVP_MAC, a constant-time digest compare and
// random nonces: the three primitives the bootstrap's authentication is built from.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tsr::runtime {

constexpr size_t kDigestBytes = 32;
using Digest = std::array<uint8_t, kDigestBytes>;

// HMAC-SHA256 under `key` of the concatenation of `parts`. An empty key is valid (HMAC pads
// keys with zeros, so it equals the one-byte key "\0").
Result<Digest> hmacSha256(std::string_view key, std::initializer_list<std::string_view> parts);

// Compares two digests in time independent of where they differ (CRYPTO_memcmp).
bool digestsEqual(const Digest& a, const Digest& b);

// Cryptographically strong random bytes (RAND_bytes).
Status randomBytes(uint8_t* out, size_t count);

// Lower-case hex, for tests and logs.
std::string toHex(const uint8_t* data, size_t count);

inline std::string_view asView(const Digest& d) { return {reinterpret_cast<const char*>(d.data()), d.size()}; }

}  // namespace tsr::runtime
