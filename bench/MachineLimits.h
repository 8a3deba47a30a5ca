//===- MachineLimits.h - the FMA peak and read bandwidth of this host -*- C++ -*-===//

#ifndef ATTN_BENCH_MACHINELIMITS_H
#define ATTN_BENCH_MACHINELIMITS_H

#include <cstddef>

namespace attn::bench {

bool hostHasAvx512();

/// fp32 FLOP/s of independent FMA chains on `threads` threads (AVX-512 when
/// the host has it, AVX2 otherwise).
double measureFmaPeak(int threads);

/// int8 multiply-add ops/s (2 per product, as FLOPs count) of independent
/// chains on `threads` threads of the q8_0 / q4_0 kernels' dot product:
/// AVX-512 VNNI vpdpbusd, else AVX2 vpmaddubsw; 0 with neither.
bool hostHasAvx512Vnni();
double measureInt8DotPeak(int threads);

/// bf16 FLOP/s of independent vdpbf16ps chains on `threads` threads (2
/// products of 2 FLOPs per f32 lane); 0 without AVX-512 BF16.
double measureBf16DotPeak(int threads);

/// bf16 FLOP/s of independent AMX tile products (tdpbf16ps) on `threads`
/// threads, for a host with amx-tile and amx-bf16 (the caller checks);
/// 0 when Linux does not grant the process the tiles' state.
double measureAmxBf16Peak(int threads);

/// Bytes/s of summing a `bytes`-sized array split across `threads`
/// threads: the best of one stream, four streams and software prefetch per
/// thread, over 3 rounds. Use >= 1 GiB so that it measures DRAM, not the
/// caches.
double measureReadBandwidth(int threads, size_t bytes);

} // namespace attn::bench

#endif // ATTN_BENCH_MACHINELIMITS_H
