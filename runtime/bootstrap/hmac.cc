#include "runtime/bootstrap/hmac.h"

#include <memory>
#include <string>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

namespace tsr::runtime {

namespace {

std::string opensslError(const char* what) {
  unsigned long e = ERR_get_error();
  char buf[256] = "unknown error";
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  return std::string("OpenSSL ") + what + " failed: " + buf;
}

// Fetched once; never freed (it lives as long as the process, like OpenSSL's own tables).
EVP_MAC* hmacAlgorithm() {
  static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
}

struct CtxFree {
  void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
};

}  // namespace

Result<Digest> hmacSha256(std::string_view key, std::initializer_list<std::string_view> parts) {
  EVP_MAC* mac = hmacAlgorithm();
  if (!mac) return Status(Code::kInternal, opensslError("EVP_MAC_fetch(HMAC)"));
  std::unique_ptr<EVP_MAC_CTX, CtxFree> ctx(EVP_MAC_CTX_new(mac));
  if (!ctx) return Status(Code::kInternal, opensslError("EVP_MAC_CTX_new"));
  char digestName[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digestName, 0),
                         OSSL_PARAM_construct_end()};
  static const unsigned char kZero = 0;
  const unsigned char* keyBytes = key.empty() ? &kZero : reinterpret_cast<const unsigned char*>(key.data());
  size_t keyLen = key.empty() ? 1 : key.size();
  if (EVP_MAC_init(ctx.get(), keyBytes, keyLen, params) != 1)
    return Status(Code::kInternal, opensslError("EVP_MAC_init"));
  for (std::string_view part : parts)
    if (!part.empty() &&
        EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(part.data()), part.size()) != 1)
      return Status(Code::kInternal, opensslError("EVP_MAC_update"));
  Digest out{};
  size_t outLen = 0;
  if (EVP_MAC_final(ctx.get(), out.data(), &outLen, out.size()) != 1 || outLen != out.size())
    return Status(Code::kInternal, opensslError("EVP_MAC_final"));
  return out;
}

bool digestsEqual(const Digest& a, const Digest& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

Status randomBytes(uint8_t* out, size_t count) {
  if (RAND_bytes(out, static_cast<int>(count)) != 1) return Status(Code::kInternal, opensslError("RAND_bytes"));
  return Status::ok();
}

std::string toHex(const uint8_t* data, size_t count) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(count * 2);
  for (size_t i = 0; i < count; ++i) {
    s += kHex[data[i] >> 4];
    s += kHex[data[i] & 15];
  }
  return s;
}

}  // namespace tsr::runtime
