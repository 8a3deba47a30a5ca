//===- AmxMicrokernel.cpp - bf16 tiles on AMX -----------------------------===//
//
// The register tile is a group of 32 rows (16 with a second weight) times
// the block in 16 x 16 f32 tiles, fed by tdpbf16ps from the input rows
// rounded to bf16 and the block interleaved into pairs of k rows (the
// tiles' layout) once per chunk. The tiles accumulate across the whole k
// loop, unrolled: a tile cannot be a loop's carried value through the LLVM
// lowering.
//
//===----------------------------------------------------------------------===//

#include "GemmKernel.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

namespace mlir::attn::gemm {

void emitAmxProducts(OpBuilder &b, Location loc, const GemmKernel &g, Value row0,
                     ArrayRef<Value> pairs, Value sums) {
  const int64_t rowTiles = g.amxRows() / kAmxRows;
  const int64_t columnTiles = g.blockSize / kAmxColumns;
  const int64_t weights = pairs.size();
  auto operandType = amx::TileType::get({kAmxRows, kAmxDepth}, b.getBF16Type());
  auto accType = amx::TileType::get({kAmxRows, kAmxColumns}, b.getF32Type());
  auto accIndex = [&](int64_t w, int64_t i, int64_t j) {
    return (w * rowTiles + i) * columnTiles + j;
  };
  SmallVector<Value> acc;
  for (int64_t t = 0; t < weights * rowTiles * columnTiles; ++t)
    acc.push_back(amx::TileZeroOp::create(b, loc, accType));
  SmallVector<Value> rowStart;
  for (int64_t i = 0; i < rowTiles; ++i)
    rowStart.push_back(arith::AddIOp::create(b, loc, row0,
                                             indexConstant(b, loc, i * kAmxRows)));
  for (int64_t k0 = 0; k0 < g.k; k0 += kAmxDepth) {
    Value k = indexConstant(b, loc, k0);
    Value pairRow = indexConstant(b, loc, k0 / 2);
    SmallVector<Value> a;
    for (int64_t i = 0; i < rowTiles; ++i)
      a.push_back(amx::TileLoadOp::create(b, loc, operandType, g.inputBf16,
                                          ValueRange{rowStart[i], k}));
    for (int64_t w = 0; w < weights; ++w)
      for (int64_t j = 0; j < columnTiles; ++j) {
        Value bTile = amx::TileLoadOp::create(
            b, loc, operandType, pairs[w],
            ValueRange{pairRow, indexConstant(b, loc, 2 * j * kAmxColumns)});
        for (int64_t i = 0; i < rowTiles; ++i) {
          Value &slot = acc[accIndex(w, i, j)];
          slot = amx::TileMulFOp::create(b, loc, accType, a[i], bTile, slot);
        }
      }
  }
  for (int64_t w = 0; w < weights; ++w)
    for (int64_t i = 0; i < rowTiles; ++i)
      for (int64_t j = 0; j < columnTiles; ++j)
        amx::TileStoreOp::create(
            b, loc, sums,
            ValueRange{indexConstant(b, loc, w * g.amxRows() + i * kAmxRows),
                       indexConstant(b, loc, j * kAmxColumns)},
            acc[accIndex(w, i, j)]);
}

} // namespace mlir::attn::gemm
