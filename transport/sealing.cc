#include "transport/sealing.h"

#include <openssl/evp.h>

#include <cstring>

namespace tsr::transport {
namespace {

void putU64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
uint64_t getU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}
// The 96-bit nonce: four zero bytes, then the sequence number.
std::array<uint8_t, 12> nonceOf(uint64_t seq) {
  std::array<uint8_t, 12> n{};
  putU64(n.data() + 4, seq);
  return n;
}

}  // namespace

struct Sealer::Ctx {
  EVP_CIPHER_CTX* enc = EVP_CIPHER_CTX_new();
  EVP_CIPHER_CTX* dec = EVP_CIPHER_CTX_new();
  ~Ctx() {
    EVP_CIPHER_CTX_free(enc);
    EVP_CIPHER_CTX_free(dec);
  }
};

Sealer::Sealer(const LinkKey& key) : ctx_(std::make_unique<Ctx>()) {
  // The key is set once; each message sets only its nonce.
  EVP_EncryptInit_ex(ctx_->enc, EVP_aes_256_gcm(), nullptr, key.data(), nullptr);
  EVP_DecryptInit_ex(ctx_->dec, EVP_aes_256_gcm(), nullptr, key.data(), nullptr);
}

Sealer::~Sealer() = default;

Status Sealer::seal(uint64_t seq, uint64_t tag, const void* in, size_t bytes, void* out) {
  if (bytes > kMaxSealedBytes)
    return Status(Code::kInvalidArgument, "seal: message of " + std::to_string(bytes) + " bytes is too large");
  auto* o = static_cast<uint8_t*>(out);
  putU64(o, seq);
  uint8_t aad[8];
  putU64(aad, tag);
  auto nonce = nonceOf(seq);
  int len = 0;
  EVP_CIPHER_CTX* c = ctx_->enc;
  bool ok = EVP_EncryptInit_ex(c, nullptr, nullptr, nullptr, nonce.data()) == 1 &&
            EVP_EncryptUpdate(c, nullptr, &len, aad, sizeof aad) == 1 &&
            (bytes == 0 || EVP_EncryptUpdate(c, o + kSealSeqBytes, &len, static_cast<const uint8_t*>(in),
                                             static_cast<int>(bytes)) == 1) &&
            EVP_EncryptFinal_ex(c, o + kSealSeqBytes + bytes, &len) == 1 &&
            EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, kSealTagBytes, o + kSealSeqBytes + bytes) == 1;
  if (!ok) return Status(Code::kInternal, "seal: AES-GCM encryption failed (OpenSSL)");
  return Status::ok();
}

Status Sealer::open(uint64_t tag, const void* in, size_t sealedBytes, void* out, uint64_t* seq) {
  if (sealedBytes < kSealOverhead)
    return Status(Code::kTransport, "sealed message of " + std::to_string(sealedBytes) +
                                        " bytes is shorter than its sequence number and tag");
  const auto* i = static_cast<const uint8_t*>(in);
  const size_t bytes = sealedBytes - kSealOverhead;
  uint64_t s = getU64(i);
  uint8_t aad[8];
  putU64(aad, tag);
  auto nonce = nonceOf(s);
  uint8_t gcmTag[kSealTagBytes];
  std::memcpy(gcmTag, i + kSealSeqBytes + bytes, kSealTagBytes);
  int len = 0;
  EVP_CIPHER_CTX* c = ctx_->dec;
  bool ok = EVP_DecryptInit_ex(c, nullptr, nullptr, nullptr, nonce.data()) == 1 &&
            EVP_DecryptUpdate(c, nullptr, &len, aad, sizeof aad) == 1 &&
            (bytes == 0 ||
             EVP_DecryptUpdate(c, static_cast<uint8_t*>(out), &len, i + kSealSeqBytes, static_cast<int>(bytes)) == 1) &&
            EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, kSealTagBytes, gcmTag) == 1 &&
            EVP_DecryptFinal_ex(c, static_cast<uint8_t*>(out) + bytes, &len) == 1;
  if (!ok) return Status(Code::kTransport, "the message does not authenticate (AES-GCM tag mismatch)");
  *seq = s;
  return Status::ok();
}

bool ReplayWindow::accept(uint64_t seq) {
  const uint64_t next = seq + 1;
  if (next > highest_) {  // newer than all: slide the window up to it
    uint64_t shift = next - highest_;
    if (shift >= kWindow) {
      seen_.fill(0);
    } else {
      for (uint64_t s = highest_; s < next; ++s) seen_[(s % kWindow) / 64] &= ~(uint64_t{1} << (s % 64));
    }
    highest_ = next;
    seen_[(seq % kWindow) / 64] |= uint64_t{1} << (seq % 64);
    return true;
  }
  if (highest_ - next >= kWindow) return false;  // too old to tell: refused
  uint64_t& word = seen_[(seq % kWindow) / 64];
  uint64_t bit = uint64_t{1} << (seq % 64);
  if (word & bit) return false;
  word |= bit;
  return true;
}

}  // namespace tsr::transport
