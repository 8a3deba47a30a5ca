//===- Sampler.h - token sampling and its random generator -----*- C++ -*-===//
//
// The PRNG is written out (splitmix64 seeding, xoshiro256** draws, 53-bit
// doubles) instead of std:: engines and distributions, whose algorithms differ
// between standard libraries: a seed must give the same tokens everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_SAMPLER_H
#define ATTNRT_SAMPLER_H

#include "attnrt/attnrt.h"

#include <cstdint>
#include <vector>

namespace attnrt {

/// splitmix64: advances `state` and returns the next output.
uint64_t splitMix64(uint64_t &state);

/// exp(x) for x <= 0 (NaN counts as -inf), to within 2 ulp, flushing
/// results below ~1e-38 to about that. Written out so it vectorizes and gives
/// the same bits everywhere (libm exp differs between platforms).
float expNonPositive(float x);

/// xoshiro256** (Blackman and Vigna), seeded from splitmix64 as its authors
/// recommend.
class Xoshiro256 {
public:
  explicit Xoshiro256(uint64_t seed);
  uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double nextDouble() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
  uint64_t s[4];
};

} // namespace attnrt

namespace attnrt {
/// A token still in the running, with its unnormalized probability.
struct Candidate {
  float logit;
  float weight;
  int32_t id;
};
} // namespace attnrt

struct attnrt_sampler {
  attnrt_sampler(const attnrt_sampler_params &params, int64_t maxVocab)
      : params(params), maxVocab(maxVocab), rng(params.seed) {}

  attnrt_sampler_params params;
  int64_t maxVocab;
  attnrt::Xoshiro256 rng;
  // Scratch sized maxVocab at creation: sampling never allocates.
  std::vector<attnrt::Candidate> candidates;
  std::vector<float> weights;
};

#endif // ATTNRT_SAMPLER_H
