//===- GemmKernel.cpp - the gemm kernels' shared builders -----------------===//
//
// Vector loads and stores with tails, prefetch, chain sums, intrinsic calls
// and the bf16 pair interleave that the microkernels and the loop nest share.
//
//===----------------------------------------------------------------------===//

#include "GemmKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::attn::gemm {

Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

Value splat(OpBuilder &b, Location loc, VectorType type, double value) {
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
}

Value loadVector(OpBuilder &b, Location loc, const GemmKernel &g, Value base,
                 ValueRange indices, int64_t lanes) {
  if (lanes == g.width)
    return vector::LoadOp::create(b, loc, g.vectorType, base, indices);
  auto maskType = VectorType::get({g.width}, b.getI1Type());
  Value mask = vector::ConstantMaskOp::create(b, loc, maskType,
                                              ArrayRef<int64_t>{lanes});
  return vector::MaskedLoadOp::create(b, loc, g.vectorType, base, indices, mask,
                                      splat(b, loc, g.vectorType, 0.0));
}

void storeVector(OpBuilder &b, Location loc, const GemmKernel &g, Value value,
                 Value base, ValueRange indices, int64_t lanes) {
  if (lanes == g.width) {
    vector::StoreOp::create(b, loc, value, base, indices);
    return;
  }
  auto maskType = VectorType::get({g.width}, b.getI1Type());
  Value mask = vector::ConstantMaskOp::create(b, loc, maskType,
                                              ArrayRef<int64_t>{lanes});
  vector::MaskedStoreOp::create(b, loc, base, indices, mask, value);
}

void emitPrefetch(OpBuilder &b, Location loc, ArrayRef<Value> buffers,
                  int64_t blocks, int64_t rows, int64_t ahead, int64_t rowElements,
                  int64_t elementBytes, Value block, Value kk) {
  Value aheadRow = arith::AddIOp::create(b, loc, kk, indexConstant(b, loc, ahead));
  Value rowCount = indexConstant(b, loc, rows);
  Value nextBlock = arith::AddIOp::create(
      b, loc, block, arith::DivUIOp::create(b, loc, aheadRow, rowCount));
  Value lastBlock = indexConstant(b, loc, blocks - 1);
  Value past = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, nextBlock, lastBlock);
  Value row = arith::SelectOp::create(b, loc, past, indexConstant(b, loc, rows - 1),
                                      arith::RemUIOp::create(b, loc, aheadRow, rowCount));
  nextBlock = arith::SelectOp::create(b, loc, past, lastBlock, nextBlock);
  int64_t lineElements = 64 / elementBytes;
  for (int64_t lane = 0; lane < rowElements; lane += lineElements)
    for (Value buffer : buffers)
      if (buffer)
        memref::PrefetchOp::create(b, loc, buffer,
                                   ValueRange{nextBlock, row, indexConstant(b, loc, lane)},
                                   /*isWrite=*/false, /*localityHint=*/3,
                                   /*isDataCache=*/true);
}

SmallVector<Value> sumChains(OpBuilder &b, Location loc, ValueRange acc,
                             int64_t chains) {
  int64_t perChain = acc.size() / chains;
  SmallVector<Value> totals;
  for (int64_t i = 0; i < perChain; ++i) {
    Value sum = acc[i];
    for (int64_t c = 1; c < chains; ++c)
      sum = arith::AddFOp::create(b, loc, sum, acc[c * perChain + i]);
    totals.push_back(sum);
  }
  return totals;
}

Value callIntrinsic(OpBuilder &b, Location loc, Type type, StringRef name,
                    ValueRange operands) {
  return LLVM::CallIntrinsicOp::create(b, loc, type, b.getStringAttr(name), operands)
      ->getResult(0);
}

void emitPairRows(OpBuilder &b, Location loc, const GemmKernel &g, Value weight,
                  Value block, Value pairs) {
  auto halfType = VectorType::get({g.width}, b.getBF16Type());
  scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, g.k / 2),
      indexConstant(b, loc, 1), ValueRange{},
      [&](OpBuilder &nb, Location l, Value kk, ValueRange) {
        Value even = arith::MulIOp::create(nb, l, kk, indexConstant(nb, l, 2));
        Value odd = arith::AddIOp::create(nb, l, even, indexConstant(nb, l, 1));
        for (int64_t j = 0; j < g.vectorsPerBlock; ++j) {
          Value lane = indexConstant(nb, l, j * g.width);
          Value lo = vector::LoadOp::create(nb, l, halfType, weight,
                                            ValueRange{block, even, lane});
          Value hi = vector::LoadOp::create(nb, l, halfType, weight,
                                            ValueRange{block, odd, lane});
          vector::StoreOp::create(nb, l, vector::InterleaveOp::create(nb, l, lo, hi),
                                  pairs,
                                  ValueRange{kk, indexConstant(nb, l, 2 * j * g.width)});
        }
        scf::YieldOp::create(nb, l);
      });
}

} // namespace mlir::attn::gemm
