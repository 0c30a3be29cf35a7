// f32 <-> f16 array casts, and f16 reductions, with F16C. This file alone is compiled with -mavx2 -mf16c (see
// CMakeLists.txt) and is entered only when activeIsa() is AVX2 and cpuHasF16c(). The results
// are bit-identical to base/half.h's floatToF16 / f16ToFloat for every input; the hardware
// conversions differ from them on NaNs only, which are fixed up per lane as described below.
#include <immintrin.h>

#include "algorithms/kernels/cast_ops.h"
#include "algorithms/kernels/detail/avx2.h"
#include "algorithms/kernels/detail/reduce_loops.h"
#include "base/half.h"

namespace tsr::kernels::avx2 {

// vcvtps2ph with imm 0 (round to nearest even, MXCSR ignored) agrees with floatToF16 on zeros,
// f32 subnormals (-> +-0), f16 subnormals, ties, overflow to Inf (>= 65520 -> Inf) and Inf.
// NaNs differ: the instruction keeps the top 10 payload bits (sign | 0x7e00 | mant >> 13) while
// floatToF16 gives the canonical sign | 0x7e00. So NaN input lanes are first replaced by the
// quiet NaN with an empty payload and the same sign (sign | 0x7fc00000), which converts to
// exactly sign | 0x7e00.
void castF32ToF16(const float* in, size_t count, uint16_t* out) {
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff);
  const __m256i infBits = _mm256_set1_epi32(0x7f800000);
  const __m256i signMask = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i qnan = _mm256_set1_epi32(0x7fc00000);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absMask), infBits);
    __m256i canon = _mm256_or_si256(_mm256_and_si256(u, signMask), qnan);
    u = _mm256_blendv_epi8(u, canon, nan);
    __m128i h = _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < count; ++i) out[i] = floatToF16(in[i]);
}

// vcvtph2ps is exact on zeros, subnormals, normals and Inf. On NaNs f16ToFloat keeps the bits
// as they are (sign | 0x7f800000 | mant << 13, a signaling NaN stays signaling) while the
// instruction sets the quiet bit of a signaling NaN. So lanes with an all-ones exponent
// (Inf and NaN) take the integer form of f16ToFloat instead.
void castF16ToF32(const uint16_t* in, size_t count, float* out) {
  const __m256i expMask = _mm256_set1_epi32(0x7c00);
  const __m256i mantMask = _mm256_set1_epi32(0x3ff);
  const __m256i signMask = _mm256_set1_epi32(0x8000);
  const __m256i infBits = _mm256_set1_epi32(0x7f800000);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    __m256 f = _mm256_cvtph_ps(h);
    __m256i w = _mm256_cvtepu16_epi32(h);
    __m256i special = _mm256_cmpeq_epi32(_mm256_and_si256(w, expMask), expMask);
    __m256i bits = _mm256_or_si256(_mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(w, signMask), 16), infBits),
                                   _mm256_slli_epi32(_mm256_and_si256(w, mantMask), 13));
    f = _mm256_blendv_ps(f, _mm256_castsi256_ps(bits), _mm256_castsi256_ps(special));
    _mm256_storeu_ps(out + i, f);
  }
  for (; i < count; ++i) out[i] = f16ToFloat(in[i]);
}

namespace {
// Lanes where either f16 input is Inf or NaN (all-ones exponent): those blocks take the
// scalar code, whose NaN bits the instructions would not reproduce.
bool anySpecial(__m128i a, __m128i b) {
  const __m128i exp16 = _mm_set1_epi16(0x7c00);
  __m128i s =
      _mm_or_si128(_mm_cmpeq_epi16(_mm_and_si128(a, exp16), exp16), _mm_cmpeq_epi16(_mm_and_si128(b, exp16), exp16));
  return !_mm_testz_si128(s, s);
}

// dropped += d in the lanes where d is finite (cast_ops.h adds nothing for an overflow).
void keepFinite(float* dropped, __m256 d) {
  const __m256i expMask = _mm256_set1_epi32(0x7f800000);
  __m256i special = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(d), expMask), expMask);
  __m256 old = _mm256_loadu_ps(dropped);
  _mm256_storeu_ps(dropped, _mm256_blendv_ps(_mm256_add_ps(old, d), old, _mm256_castsi256_ps(special)));
}
}  // namespace

// Finite f16 inputs: vcvtph2ps is exact, the f32 add and vcvtps2ph (round to nearest even,
// overflow to Inf) are what f16SumKeepingDropped does.
void sumF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t count, float* dropped) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(dst + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    if (anySpecial(a, b)) {
      for (size_t j = i; j < i + 8; ++j) dst[j] = f16SumKeepingDropped(dst[j], src[j], dropped[j]);
      continue;
    }
    __m256 sum = _mm256_add_ps(_mm256_cvtph_ps(a), _mm256_cvtph_ps(b));
    __m128i h = _mm256_cvtps_ph(sum, _MM_FROUND_TO_NEAREST_INT);
    keepFinite(dropped + i, _mm256_sub_ps(sum, _mm256_cvtph_ps(h)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < count; ++i) dst[i] = f16SumKeepingDropped(dst[i], src[i], dropped[i]);
}

void averageF16KeepingDropped(uint16_t* data, size_t count, float divisor, float* dropped) {
  const __m256 dv = _mm256_set1_ps(divisor);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    if (anySpecial(v, v)) {
      for (size_t j = i; j < i + 8; ++j) data[j] = f16AverageKeepingDropped(data[j], divisor, dropped[j]);
      continue;
    }
    __m256 s = _mm256_cvtph_ps(v);
    __m128i h = _mm256_cvtps_ph(_mm256_div_ps(s, dv), _MM_FROUND_TO_NEAREST_INT);
    keepFinite(dropped + i, _mm256_sub_ps(s, _mm256_mul_ps(dv, _mm256_cvtph_ps(h))));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(data + i), h);
  }
  for (; i < count; ++i) data[i] = f16AverageKeepingDropped(data[i], divisor, dropped[i]);
}

namespace {
// One op on 8 finite f16 lanes: vcvtph2ps is exact, the f32 op is the portable loop's (min and
// max as `b < a ? b : a` and `a < b ? b : a`, which vminps/vmaxps with b first are), and
// vcvtps2ph rounds as floatToF16 does for finite values (overflow to Inf included).
template <ReduceOp Op>
__m256 apply(__m256 a, __m256 b) {
  if constexpr (Op == ReduceOp::kProd)
    return _mm256_mul_ps(a, b);
  else if constexpr (Op == ReduceOp::kMin)
    return _mm256_min_ps(b, a);
  else if constexpr (Op == ReduceOp::kMax)
    return _mm256_max_ps(b, a);
  else
    return _mm256_add_ps(a, b);  // sum, avg
}

template <ReduceOp Op>
void reduceF16Lanes(uint16_t* dst, const unsigned char* src, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(dst + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    if (anySpecial(a, b)) {  // Inf or NaN: the portable loop's NaN bits
      reduceLoop(dst + i, src + 2 * i, 8, DataType::kF16, Op);
      continue;
    }
    __m256 r = apply<Op>(_mm256_cvtph_ps(a), _mm256_cvtph_ps(b));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < count) reduceLoop(dst + i, src + 2 * i, count - i, DataType::kF16, Op);
}
}  // namespace

void reduceF16(uint16_t* dst, const void* src, size_t count, ReduceOp op) {
  const auto* s = static_cast<const unsigned char*>(src);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return reduceF16Lanes<ReduceOp::kSum>(dst, s, count);
    case ReduceOp::kProd:
      return reduceF16Lanes<ReduceOp::kProd>(dst, s, count);
    case ReduceOp::kMin:
      return reduceF16Lanes<ReduceOp::kMin>(dst, s, count);
    case ReduceOp::kMax:
      return reduceF16Lanes<ReduceOp::kMax>(dst, s, count);
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return;  // integers only: refused before any plan runs
  }
}

void divideF16(uint16_t* data, size_t count, float divisor) {
  const __m256 d = _mm256_set1_ps(divisor);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    if (anySpecial(v, v)) {
      for (size_t j = i; j < i + 8; ++j) data[j] = floatToF16(f16ToFloat(data[j]) / divisor);
      continue;
    }
    __m128i h = _mm256_cvtps_ph(_mm256_div_ps(_mm256_cvtph_ps(v), d), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(data + i), h);
  }
  for (; i < count; ++i) data[i] = floatToF16(f16ToFloat(data[i]) / divisor);
}

}  // namespace tsr::kernels::avx2
