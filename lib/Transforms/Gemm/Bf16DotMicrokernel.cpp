//===- Bf16DotMicrokernel.cpp - bf16 tiles through vdpbf16ps --------------===//
//
// AVX-512 BF16: the k loop runs over pairs of k, each input row's pair of
// bf16 broadcast against 16 pairs of the block interleaved once per chunk
// (emitPairRows). Zen 4/5 run vdpbf16ps at twice the FMA rate.
//
//===----------------------------------------------------------------------===//

#include "GemmKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::attn::gemm {

namespace {

/// vdpbf16ps (AVX-512 BF16): each f32 lane of `acc` plus the two products of
/// its pair of bf16 in `a` and in `b`.
Value dotBf16(OpBuilder &b, Location loc, Value acc, Value a, Value pairsOfB) {
  return callIntrinsic(b, loc, acc.getType(), "llvm.x86.avx512bf16.dpbf16ps.512",
                       ValueRange{acc, a, pairsOfB});
}

} // namespace

SmallVector<Value> emitBf16DotProducts(OpBuilder &b, Location loc, const GemmKernel &g,
                                       ArrayRef<Value> rowIndex, int64_t rows) {
  const int64_t vectors = g.vectorsPerBlock;
  const int64_t weights = g.pairs.size();
  const int64_t pairCount = g.k / 2;
  const int64_t unroll = pairCount % g.kUnroll == 0 ? g.kUnroll : 1;
  const int64_t chains = rows == 1 ? unroll : 1;
  auto accIndex = [&](int64_t chain, int64_t weight, int64_t row, int64_t j) {
    return ((chain * weights + weight) * rows + row) * vectors + j;
  };
  SmallVector<Value> zeros(chains * weights * rows * vectors,
                           splat(b, loc, g.vectorType, 0.0));
  auto pairType = VectorType::get({2 * g.width}, b.getBF16Type());
  auto laneType = VectorType::get({g.width}, b.getI32Type());
  auto kLoop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, pairCount),
      indexConstant(b, loc, unroll), zeros,
      [&](OpBuilder &nb, Location l, Value k, ValueRange carried) {
        SmallVector<Value> acc(carried);
        for (int64_t u = 0; u < unroll; ++u) {
          Value kk = u == 0 ? k
                            : arith::AddIOp::create(nb, l, k, indexConstant(nb, l, u));
          int64_t chain = chains == 1 ? 0 : u;
          SmallVector<Value> bPairs[2];
          for (int64_t w = 0; w < weights; ++w)
            for (int64_t j = 0; j < vectors; ++j)
              bPairs[w].push_back(vector::LoadOp::create(
                  nb, l, pairType, g.pairs[w],
                  ValueRange{kk, indexConstant(nb, l, 2 * j * g.width)}));
          for (int64_t r = 0; r < rows; ++r) {
            Value pair = memref::LoadOp::create(nb, l, g.inputPairs,
                                                ValueRange{rowIndex[r], kk});
            Value a = vector::BitCastOp::create(
                nb, l, pairType, vector::BroadcastOp::create(nb, l, laneType, pair));
            for (int64_t w = 0; w < weights; ++w)
              for (int64_t j = 0; j < vectors; ++j) {
                Value &slot = acc[accIndex(chain, w, r, j)];
                slot = dotBf16(nb, l, slot, a, bPairs[w][j]);
              }
          }
        }
        scf::YieldOp::create(nb, l, acc);
      });
  return sumChains(b, loc, kLoop.getResults(), chains);
}

} // namespace mlir::attn::gemm
