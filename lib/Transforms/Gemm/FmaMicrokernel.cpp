//===- FmaMicrokernel.cpp - f32 FMA tiles of f32 and bf16 weights ---------===//
//
// The register tile as f32 FMAs: each k step loads the block's vectors of
// the weight row (a bf16 weight widened to f32 as it is loaded: exact, and
// half the bytes to stream) and broadcasts each input row's element against
// them. 8 lanes with AVX2, 16 with AVX-512.
//
//===----------------------------------------------------------------------===//

#include "GemmKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::attn::gemm {

SmallVector<Value> emitFmaProducts(OpBuilder &b, Location loc, const GemmKernel &g,
                                   ArrayRef<Value> rowIndex, Value block,
                                   int64_t rows) {
  const int64_t vectors = g.vectorsPerBlock;
  const int64_t weights = g.weight2 ? 2 : 1;
  // One row has too few independent FMAs to hide their latency: keep one
  // accumulator chain per unrolled k step and add them up at the end.
  const int64_t chains = rows == 1 ? g.kUnroll : 1;
  auto accIndex = [&](int64_t chain, int64_t weight, int64_t row, int64_t j) {
    return ((chain * weights + weight) * rows + row) * vectors + j;
  };
  int64_t numAcc = chains * weights * rows * vectors;
  SmallVector<Value> zeros(numAcc, splat(b, loc, g.vectorType, 0.0));
  SmallVector<Value> lane;
  for (int64_t j = 0; j < vectors; ++j)
    lane.push_back(indexConstant(b, loc, j * g.width));

  auto kLoop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, g.k),
      indexConstant(b, loc, g.kUnroll), zeros,
      [&](OpBuilder &nb, Location l, Value k, ValueRange carried) {
        SmallVector<Value> acc(carried);
        for (int64_t u = 0; u < g.kUnroll; ++u) {
          Value kk = u == 0 ? k
                            : arith::AddIOp::create(nb, l, k,
                                                    indexConstant(nb, l, u));
          int64_t chain = chains == 1 ? 0 : u;
          if (rows == 1 && g.prefetchRows > 0)
            emitPrefetch(nb, l, {g.weight, g.weight2}, g.blocks, g.k, g.prefetchRows,
                         g.blockSize, g.weightVectorType.getElementTypeBitWidth() / 8,
                         block, kk);
          SmallVector<Value> bVec[2];
          for (int64_t w = 0; w < weights; ++w) {
            Value weight = w == 0 ? g.weight : g.weight2;
            for (int64_t j = 0; j < vectors; ++j) {
              Value loaded = vector::LoadOp::create(
                  nb, l, g.weightVectorType, weight,
                  ValueRange{g.widenedBlock ? indexConstant(nb, l, 0) : block, kk, lane[j]});
              // bf16 is the top half of an f32: widening is exact.
              if (g.weightVectorType != g.vectorType)
                loaded = arith::ExtFOp::create(nb, l, g.vectorType, loaded);
              bVec[w].push_back(loaded);
            }
          }
          for (int64_t r = 0; r < rows; ++r) {
            Value a = memref::LoadOp::create(nb, l, g.input,
                                             ValueRange{rowIndex[r], kk});
            Value aVec = vector::BroadcastOp::create(nb, l, g.vectorType, a);
            for (int64_t w = 0; w < weights; ++w)
              for (int64_t j = 0; j < vectors; ++j) {
                Value &slot = acc[accIndex(chain, w, r, j)];
                slot = vector::FMAOp::create(nb, l, g.vectorType, aVec,
                                             bVec[w][j], slot);
              }
          }
        }
        scf::YieldOp::create(nb, l, acc);
      });

  return sumChains(b, loc, kLoop.getResults(), chains);
}

} // namespace mlir::attn::gemm
