//===- GgmlTypes.cpp - ggml's tensor types and their dequantization -------===//

#include "GgmlTypes.h"

#include "Half.h"

#include <cstring>

namespace attnrt {

namespace {

constexpr uint32_t superBlock = 256; // ggml's QK_K.

const GgmlTypeTraits traitsTable[] = {
    {GgmlType::F32, "f32", 1, 4},
    {GgmlType::F16, "f16", 1, 2},
    {GgmlType::Q4_0, "q4_0", 32, 18},
    {GgmlType::Q4_1, "q4_1", 32, 20},
    {GgmlType::Q5_0, "q5_0", 32, 22},
    {GgmlType::Q5_1, "q5_1", 32, 24},
    {GgmlType::Q8_0, "q8_0", 32, 34},
    {GgmlType::Q8_1, "q8_1", 32, 36},
    {GgmlType::Q2_K, "q2_K", superBlock, 84},
    {GgmlType::Q3_K, "q3_K", superBlock, 110},
    {GgmlType::Q4_K, "q4_K", superBlock, 144},
    {GgmlType::Q5_K, "q5_K", superBlock, 176},
    {GgmlType::Q6_K, "q6_K", superBlock, 210},
    {GgmlType::Q8_K, "q8_K", superBlock, 292},
    {GgmlType::IQ2_XXS, "iq2_xxs", superBlock, 66},
    {GgmlType::IQ2_XS, "iq2_xs", superBlock, 74},
    {GgmlType::IQ3_XXS, "iq3_xxs", superBlock, 98},
    {GgmlType::IQ1_S, "iq1_s", superBlock, 50},
    {GgmlType::IQ4_NL, "iq4_nl", 32, 18},
    {GgmlType::IQ3_S, "iq3_s", superBlock, 110},
    {GgmlType::IQ2_S, "iq2_s", superBlock, 82},
    {GgmlType::IQ4_XS, "iq4_xs", superBlock, 136},
    {GgmlType::I8, "i8", 1, 1},
    {GgmlType::I16, "i16", 1, 2},
    {GgmlType::I32, "i32", 1, 4},
    {GgmlType::I64, "i64", 1, 8},
    {GgmlType::F64, "f64", 1, 8},
    {GgmlType::IQ1_M, "iq1_m", superBlock, 56},
    {GgmlType::BF16, "bf16", 1, 2},
    {GgmlType::TQ1_0, "tq1_0", superBlock, 54},
    {GgmlType::TQ2_0, "tq2_0", superBlock, 66},
    {GgmlType::MXFP4, "mxfp4", 32, 17},
};

uint16_t load16(const uint8_t *p) { return uint16_t(p[0] | (p[1] << 8)); }
float loadHalf(const uint8_t *p) { return halfToFloat(load16(p)); }

// Q4_K and Q5_K pack eight 6-bit scales and eight 6-bit mins in 12 bytes:
// sub-blocks 0-3 in the low six bits of bytes 0-3 (scales) and 4-7 (mins);
// sub-blocks 4-7 in the nibbles of bytes 8-11 with their top two bits in the
// high bits of bytes 0-3 (scales) and 4-7 (mins). ggml's get_scale_min_k4.
void scaleMin(int j, const uint8_t *q, uint8_t &scale, uint8_t &min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    min = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void dequantizeQ4_0(const uint8_t *b, float *y) {
  float d = loadHalf(b);
  const uint8_t *q = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = float((q[j] & 0xF) - 8) * d;
    y[j + 16] = float((q[j] >> 4) - 8) * d;
  }
}

void dequantizeQ4_1(const uint8_t *b, float *y) {
  float d = loadHalf(b), m = loadHalf(b + 2);
  const uint8_t *q = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = float(q[j] & 0xF) * d + m;
    y[j + 16] = float(q[j] >> 4) * d + m;
  }
}

// Q5_0/Q5_1: bit j of the u32 is element j's fifth bit, bit j + 16 element
// j + 16's.
void dequantizeQ5(const uint8_t *b, float *y, bool hasMin) {
  float d = loadHalf(b);
  float m = hasMin ? loadHalf(b + 2) : 0.0f;
  const uint8_t *p = b + (hasMin ? 4 : 2);
  uint32_t high;
  std::memcpy(&high, p, 4);
  const uint8_t *q = p + 4;
  for (int j = 0; j < 16; ++j) {
    int lo = (q[j] & 0xF) | (((high >> j) << 4) & 0x10);
    int hi = (q[j] >> 4) | ((high >> (j + 12)) & 0x10);
    if (hasMin) {
      y[j] = float(lo) * d + m;
      y[j + 16] = float(hi) * d + m;
    } else {
      y[j] = float(lo - 16) * d;
      y[j + 16] = float(hi - 16) * d;
    }
  }
}

void dequantizeQ8_0(const uint8_t *b, float *y) {
  float d = loadHalf(b);
  for (int j = 0; j < 32; ++j)
    y[j] = float(static_cast<int8_t>(b[2 + j])) * d;
}

// Q4_K: [d, dmin, scales[12], qs[128]]; Q5_K adds qh[32] before qs. Each
// 64 elements take 32 bytes of qs: low nibbles the first 32, high the next;
// for Q5_K, bits 2i and 2i+1 of qh[l] are the fifth bits of element l of
// those two halves in the i-th group of 64.
void dequantizeQ45K(const uint8_t *b, float *y, bool fifthBit) {
  float d = loadHalf(b), dmin = loadHalf(b + 2);
  const uint8_t *scales = b + 4;
  const uint8_t *qh = b + 16;
  const uint8_t *q = b + (fifthBit ? 48 : 16);
  for (int group = 0; group < 4; ++group, q += 32) {
    uint8_t sc, m;
    scaleMin(2 * group, scales, sc, m);
    float d1 = d * float(sc), m1 = dmin * float(m);
    scaleMin(2 * group + 1, scales, sc, m);
    float d2 = d * float(sc), m2 = dmin * float(m);
    uint8_t lowBit = uint8_t(1 << (2 * group)), highBit = uint8_t(lowBit << 1);
    for (int l = 0; l < 32; ++l) {
      int v = q[l] & 0xF;
      if (fifthBit && (qh[l] & lowBit))
        v += 16;
      *y++ = d1 * float(v) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      int v = q[l] >> 4;
      if (fifthBit && (qh[l] & highBit))
        v += 16;
      *y++ = d2 * float(v) - m2;
    }
  }
}

// Q6_K: [ql[128], qh[64], scales[16] (i8), d]. Each half of 128 elements
// takes 64 bytes of ql and 32 of qh; element l + 32 i of the half has its low
// four bits in ql (l for i = 0, 2; l + 32 for i = 1, 3; high nibble for
// i >= 2) and its top two bits at bit 2i of qh[l]; scale index l / 16 + 2 i.
void dequantizeQ6K(const uint8_t *b, float *y) {
  const uint8_t *ql = b;
  const uint8_t *qh = b + 128;
  const int8_t *sc = reinterpret_cast<const int8_t *>(b + 192);
  float d = loadHalf(b + 208);
  for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      int is = l / 16;
      int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * float(sc[is]) * float(q1);
      y[l + 32] = d * float(sc[is + 2]) * float(q2);
      y[l + 64] = d * float(sc[is + 4]) * float(q3);
      y[l + 96] = d * float(sc[is + 6]) * float(q4);
    }
  }
}

} // namespace

const GgmlTypeTraits *ggmlTypeTraits(uint32_t id) {
  for (const GgmlTypeTraits &traits : traitsTable)
    if (static_cast<uint32_t>(traits.type) == id)
      return &traits;
  return nullptr;
}

bool canDequantizeGgml(GgmlType type) {
  switch (type) {
  case GgmlType::F32:
  case GgmlType::F16:
  case GgmlType::BF16:
  case GgmlType::Q4_0:
  case GgmlType::Q4_1:
  case GgmlType::Q5_0:
  case GgmlType::Q5_1:
  case GgmlType::Q8_0:
  case GgmlType::Q4_K:
  case GgmlType::Q5_K:
  case GgmlType::Q6_K:
    return true;
  default:
    return false;
  }
}

void dequantizeGgmlRow(GgmlType type, const uint8_t *blocks, float *out,
                       int64_t count) {
  // Plain element types: one loop, not a dispatch per element.
  switch (type) {
  case GgmlType::F32:
    std::memcpy(out, blocks, size_t(count) * 4);
    return;
  case GgmlType::F16:
    for (int64_t i = 0; i < count; ++i)
      out[i] = loadHalf(blocks + 2 * i);
    return;
  case GgmlType::BF16:
    for (int64_t i = 0; i < count; ++i)
      out[i] = bfloat16ToFloat(load16(blocks + 2 * i));
    return;
  default:
    break;
  }
  const GgmlTypeTraits &traits = ggmlTypeTraits(type);
  int64_t numBlocks = count / traits.blockSize;
  for (int64_t i = 0; i < numBlocks; ++i) {
    const uint8_t *b = blocks + i * traits.typeSize;
    float *y = out + i * traits.blockSize;
    switch (type) {
    case GgmlType::Q4_0:
      dequantizeQ4_0(b, y);
      break;
    case GgmlType::Q4_1:
      dequantizeQ4_1(b, y);
      break;
    case GgmlType::Q5_0:
      dequantizeQ5(b, y, /*hasMin=*/false);
      break;
    case GgmlType::Q5_1:
      dequantizeQ5(b, y, /*hasMin=*/true);
      break;
    case GgmlType::Q8_0:
      dequantizeQ8_0(b, y);
      break;
    case GgmlType::Q4_K:
      dequantizeQ45K(b, y, /*fifthBit=*/false);
      break;
    case GgmlType::Q5_K:
      dequantizeQ45K(b, y, /*fifthBit=*/true);
      break;
    case GgmlType::Q6_K:
      dequantizeQ6K(b, y);
      break;
    default:
      __builtin_unreachable();
    }
  }
}

} // namespace attnrt
