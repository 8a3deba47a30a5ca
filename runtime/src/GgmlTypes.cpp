//===- GgmlTypes.cpp - ggml's tensor types and their dequantization -------===//

#include "GgmlTypes.h"

#include "Half.h"

#include <algorithm>
#include <cmath>
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

//===----------------------------------------------------------------------===//
// Quantization: ggml's reference quantizers, operation for operation (the
// order of every sum and product matters for identical bytes).
//===----------------------------------------------------------------------===//

void storeHalf(uint8_t *p, float value) {
  uint16_t h = floatToHalf(value);
  p[0] = uint8_t(h);
  p[1] = uint8_t(h >> 8);
}

/// ggml's nearest_int: round to nearest even through the float adder
/// (|value| <= 2^22).
int nearestInt(float value) {
  float shifted = value + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, 4);
  return (bits & 0x007FFFFF) - 0x00400000;
}

void quantizeQ8_0(const float *x, uint8_t *b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j)
    amax = std::max(amax, std::fabs(x[j]));
  float d = amax / 127;
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  storeHalf(b, d);
  for (int j = 0; j < 32; ++j)
    b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
}

void quantizeQ4_0(const float *x, uint8_t *b) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  float d = max / -8;
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  storeHalf(b, d);
  for (int j = 0; j < 16; ++j) {
    // Truncation toward zero of a value in [0.5, 16.5], as ggml's
    // (int8_t) cast.
    int lo = std::min(15, int(static_cast<int8_t>(x[j] * id + 8.5f)));
    int hi = std::min(15, int(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
    b[2 + j] = uint8_t(lo | (hi << 4));
  }
}

// Q4_1 and Q5_1: levels from the block's min over (max - min) / (2^bits -
// 1); the casts truncate as ggml's do.
void quantizeQ41Q51(const float *x, uint8_t *b, bool fifthBit) {
  float min = x[0], max = x[0];
  for (int j = 1; j < 32; ++j) {
    if (x[j] < min)
      min = x[j];
    if (x[j] > max)
      max = x[j];
  }
  float d = (max - min) / (fifthBit ? 31 : 15);
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  storeHalf(b, d);
  storeHalf(b + 2, min);
  uint32_t high = 0;
  uint8_t *q = b + (fifthBit ? 8 : 4);
  for (int j = 0; j < 16; ++j) {
    float x0 = (x[j] - min) * id, x1 = (x[j + 16] - min) * id;
    int lo, hi;
    if (fifthBit) {
      lo = static_cast<uint8_t>(x0 + 0.5f);
      hi = static_cast<uint8_t>(x1 + 0.5f);
      high |= uint32_t((lo & 0x10) >> 4) << j;
      high |= uint32_t((hi & 0x10) >> 4) << (j + 16);
    } else {
      lo = std::min(15, int(static_cast<int8_t>(x0 + 0.5f)));
      hi = std::min(15, int(static_cast<int8_t>(x1 + 0.5f)));
    }
    q[j] = uint8_t((lo & 0xF) | ((hi & 0xF) << 4));
  }
  if (fifthBit)
    std::memcpy(b + 4, &high, 4);
}

// Q5_0: Q4_0 with a fifth bit, levels -16..15.
void quantizeQ5_0(const float *x, uint8_t *b) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  float d = max / -16;
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  storeHalf(b, d);
  uint32_t high = 0;
  for (int j = 0; j < 16; ++j) {
    int lo = std::min(31, int(static_cast<int8_t>(x[j] * id + 16.5f)));
    int hi = std::min(31, int(static_cast<int8_t>(x[j + 16] * id + 16.5f)));
    b[6 + j] = uint8_t((lo & 0xF) | ((hi & 0xF) << 4));
    high |= uint32_t((lo & 0x10) >> 4) << j;
    high |= uint32_t((hi & 0x10) >> 4) << (j + 16);
  }
  std::memcpy(b + 2, &high, 4);
}

/// ggml's make_qkx2_quants: levels L in [0, nmax] and a scale and min for
/// one sub-block, searching nstep + 1 scales around the first guess for the
/// least weighted squared error.
float makeQkx2Quants(int n, int nmax, const float *x, const float *weights,
                     uint8_t *L, float &theMin, uint8_t *Laux, float rmin,
                     float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sumW = weights[0];
  float sumX = sumW * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min)
      min = x[i];
    if (x[i] > max)
      max = x[i];
    float w = weights[i];
    sumW += w;
    sumX += w * x[i];
  }
  if (min > 0)
    min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i)
      L[i] = 0;
    theMin = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float bestMad = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearestInt(iscale * (x[i] - min));
    L[i] = uint8_t(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = diff * diff;
    bestMad += weights[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sumL = 0, sumL2 = 0, sumXL = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearestInt(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = uint8_t(l);
      float w = weights[i];
      sumL += w * l;
      sumL2 += w * l * l;
      sumXL += w * l * x[i];
    }
    float D = sumW * sumL2 - sumL * sumL;
    if (D > 0) {
      float thisScale = (sumW * sumXL - sumX * sumL) / D;
      float thisMin = (sumL2 * sumX - sumL * sumXL) / D;
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = sumXL / sumL2;
      }
      float mad = 0;
      for (int i = 0; i < n; ++i) {
        float diff = thisScale * Laux[i] + thisMin - x[i];
        diff = diff * diff;
        mad += weights[i] * diff;
      }
      if (mad < bestMad) {
        for (int i = 0; i < n; ++i)
          L[i] = Laux[i];
        bestMad = mad;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  theMin = -min;
  return scale;
}

// Q4_K (nmax 15) and Q5_K (nmax 31): eight sub-blocks of 32 quantized by
// makeQkx2Quants, their scales and mins requantized to 6 bits against the
// largest, then every value requantized against its 6-bit scale and min.
void quantizeQ45K(const float *x, uint8_t *b, bool fifthBit) {
  const int nmax = fifthBit ? 31 : 15;
  uint8_t L[256], Laux[32];
  float weights[32], mins[8], scales[8];
  float maxScale = 0, maxMin = 0;
  for (int j = 0; j < 8; ++j) {
    float sumX2 = 0;
    for (int l = 0; l < 32; ++l)
      sumX2 += x[32 * j + l] * x[32 * j + l];
    float avX = std::sqrt(sumX2 / 32);
    for (int l = 0; l < 32; ++l)
      weights[l] = avX + std::fabs(x[32 * j + l]);
    scales[j] = fifthBit
                    ? makeQkx2Quants(32, nmax, x + 32 * j, weights, L + 32 * j,
                                     mins[j], Laux, -0.5f, 0.1f, 15)
                    : makeQkx2Quants(32, nmax, x + 32 * j, weights, L + 32 * j,
                                     mins[j], Laux, -1.f, 0.1f, 20);
    maxScale = std::max(maxScale, scales[j]);
    maxMin = std::max(maxMin, mins[j]);
  }
  float invScale = maxScale > 0 ? 63.f / maxScale : 0.f;
  float invMin = maxMin > 0 ? 63.f / maxMin : 0.f;
  uint8_t *packed = b + 4;
  for (int j = 0; j < 8; ++j) {
    // ggml stores nearest_int in a uint8_t before clamping to 63.
    uint8_t ls = std::min<uint8_t>(63, uint8_t(nearestInt(invScale * scales[j])));
    uint8_t lm = std::min<uint8_t>(63, uint8_t(nearestInt(invMin * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= uint8_t((ls >> 4) << 6);
      packed[j] |= uint8_t((lm >> 4) << 6);
    }
  }
  storeHalf(b, maxScale / 63.f);
  storeHalf(b + 2, maxMin / 63.f);
  float d = loadHalf(b), dmin = loadHalf(b + 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scaleMin(j, packed, sc, m);
    float dj = d * sc;
    if (dj == 0.0f)
      continue;
    float dm = dmin * m;
    for (int i = 0; i < 32; ++i) {
      int l = nearestInt((x[32 * j + i] + dm) / dj);
      L[32 * j + i] = uint8_t(std::max(0, std::min(nmax, l)));
    }
  }
  uint8_t *qh = b + 16;
  uint8_t *q = b + (fifthBit ? 48 : 16);
  if (fifthBit)
    std::memset(qh, 0, 32);
  for (int group = 0; group < 4; ++group, q += 32) {
    uint8_t lowBit = uint8_t(1 << (2 * group)), highBit = uint8_t(lowBit << 1);
    for (int l = 0; l < 32; ++l) {
      int lo = L[64 * group + l], hi = L[64 * group + l + 32];
      if (fifthBit) {
        if (lo > 15) {
          lo -= 16;
          qh[l] |= lowBit;
        }
        if (hi > 15) {
          hi -= 16;
          qh[l] |= highBit;
        }
      }
      q[l] = uint8_t(lo | (hi << 4));
    }
  }
}

/// ggml's make_qx_quants with rmse_type 1 and no importance weights:
/// symmetric levels in [-nmax, nmax - 1] (stored + nmax) and the scale of
/// least x^2-weighted squared error among 19 candidates.
float makeQxQuants(int n, int nmax, const float *x, int8_t *L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < 1e-15f) { // ggml's GROUP_MAX_EPS.
    for (int i = 0; i < n; ++i)
      L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumLX = 0, sumL2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearestInt(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = int8_t(l + nmax);
    float w = x[i] * x[i];
    sumLX += w * x[i] * l;
    sumL2 += w * l * l;
  }
  float scale = sumL2 != 0.0f ? sumLX / sumL2 : 0.0f;
  float best = scale * sumLX;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0)
      continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumLX = sumL2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearestInt(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      float w = x[i] * x[i];
      sumLX += w * x[i] * l;
      sumL2 += w * l * l;
    }
    if (sumL2 > 0 && sumLX * sumLX > best * sumL2) {
      for (int i = 0; i < n; ++i) {
        int l = nearestInt(iscale * x[i]);
        L[i] = int8_t(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumLX / sumL2;
      best = scale * sumLX;
    }
  }
  return scale;
}

// Q6_K: sixteen sub-blocks of 16 quantized by makeQxQuants, their scales
// requantized to int8 against the largest in magnitude, then every value
// requantized against its int8 scale.
void quantizeQ6K(const float *x, uint8_t *b) {
  int8_t L[256];
  float scales[16];
  float maxScale = 0, maxAbsScale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    float scale = makeQxQuants(16, 32, x + 16 * ib, L + 16 * ib);
    scales[ib] = scale;
    if (std::fabs(scale) > maxAbsScale) {
      maxAbsScale = std::fabs(scale);
      maxScale = scale;
    }
  }
  if (maxAbsScale < 1e-15f) {
    std::memset(b, 0, 210);
    return;
  }
  int8_t *sc = reinterpret_cast<int8_t *>(b + 192);
  float iscale = -128.f / maxScale;
  storeHalf(b + 208, 1 / iscale);
  for (int ib = 0; ib < 16; ++ib)
    sc[ib] = int8_t(std::min(127, nearestInt(iscale * scales[ib])));
  float d = loadHalf(b + 208);
  for (int j = 0; j < 16; ++j) {
    float dj = d * sc[j];
    if (dj == 0.0f)
      continue;
    for (int i = 0; i < 16; ++i) {
      int l = nearestInt(x[16 * j + i] / dj);
      L[16 * j + i] = int8_t(std::max(-32, std::min(31, l)) + 32);
    }
  }
  uint8_t *ql = b, *qh = b + 128;
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32) {
    const int8_t *l = L + 128 * half;
    for (int i = 0; i < 32; ++i) {
      ql[i] = uint8_t((l[i] & 0xF) | ((l[i + 64] & 0xF) << 4));
      ql[i + 32] = uint8_t((l[i + 32] & 0xF) | ((l[i + 96] & 0xF) << 4));
      qh[i] = uint8_t((l[i] >> 4) | ((l[i + 32] >> 4) << 2) |
                      ((l[i + 64] >> 4) << 4) | ((l[i + 96] >> 4) << 6));
    }
  }
}

/// The block types: one block's dequantization and quantization each.
struct BlockCodec {
  GgmlType type;
  void (*dequantize)(const uint8_t *block, float *values);
  void (*quantize)(const float *values, uint8_t *block);
};

const BlockCodec codecs[] = {
    {GgmlType::Q4_0, dequantizeQ4_0, quantizeQ4_0},
    {GgmlType::Q4_1, dequantizeQ4_1,
     [](const float *x, uint8_t *b) { quantizeQ41Q51(x, b, false); }},
    {GgmlType::Q5_0,
     [](const uint8_t *b, float *y) { dequantizeQ5(b, y, false); },
     quantizeQ5_0},
    {GgmlType::Q5_1,
     [](const uint8_t *b, float *y) { dequantizeQ5(b, y, true); },
     [](const float *x, uint8_t *b) { quantizeQ41Q51(x, b, true); }},
    {GgmlType::Q8_0, dequantizeQ8_0, quantizeQ8_0},
    {GgmlType::Q4_K,
     [](const uint8_t *b, float *y) { dequantizeQ45K(b, y, false); },
     [](const float *x, uint8_t *b) { quantizeQ45K(x, b, false); }},
    {GgmlType::Q5_K,
     [](const uint8_t *b, float *y) { dequantizeQ45K(b, y, true); },
     [](const float *x, uint8_t *b) { quantizeQ45K(x, b, true); }},
    {GgmlType::Q6_K, dequantizeQ6K, quantizeQ6K},
};

const BlockCodec *findCodec(GgmlType type) {
  for (const BlockCodec &codec : codecs)
    if (codec.type == type)
      return &codec;
  return nullptr;
}

} // namespace

const GgmlTypeTraits *ggmlTypeTraits(uint32_t id) {
  for (const GgmlTypeTraits &traits : traitsTable)
    if (static_cast<uint32_t>(traits.type) == id)
      return &traits;
  return nullptr;
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
  const BlockCodec *codec = findCodec(type);
  const GgmlTypeTraits &traits = ggmlTypeTraits(type);
  for (int64_t i = 0; i < count / traits.blockSize; ++i)
    codec->dequantize(blocks + i * traits.typeSize, out + i * traits.blockSize);
}

bool canDequantizeGgml(GgmlType type) {
  return type == GgmlType::F32 || type == GgmlType::F16 ||
         type == GgmlType::BF16 || findCodec(type) != nullptr;
}

bool canQuantizeGgml(GgmlType type) {
  // Every type Attn reads.
  return canDequantizeGgml(type);
}

void quantizeGgmlRow(GgmlType type, const float *values, uint8_t *blocks,
                     int64_t count) {
  switch (type) {
  case GgmlType::F32:
    std::memcpy(blocks, values, size_t(count) * 4);
    return;
  case GgmlType::F16:
    for (int64_t i = 0; i < count; ++i)
      storeHalf(blocks + 2 * i, values[i]);
    return;
  case GgmlType::BF16:
    for (int64_t i = 0; i < count; ++i) {
      uint16_t h = floatToBfloat16(values[i]);
      blocks[2 * i] = uint8_t(h);
      blocks[2 * i + 1] = uint8_t(h >> 8);
    }
    return;
  default:
    break;
  }
  const BlockCodec *codec = findCodec(type);
  const GgmlTypeTraits &traits = ggmlTypeTraits(type);
  for (int64_t i = 0; i < count / traits.blockSize; ++i)
    codec->quantize(values + i * traits.blockSize, blocks + i * traits.typeSize);
}

} // namespace attnrt
