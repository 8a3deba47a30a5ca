//===- Int8Microkernel.cpp - q8_0 and q4_0 tiles by int8 dots -------------===//
//
// The k loop walks blocks of 32 inputs: the input rows, quantized to int8
// per block of 32 once per gemm (GemmInputs.cpp), meet the weight bytes in
// int8 dot products (4 products per 32-bit lane, summed in int32: one
// vpdpbusd with VNNI, vpmaddubsw then vpmaddwd without), and each block's
// sums join the f32 accumulators times the two scales.
//
//===----------------------------------------------------------------------===//

#include "GemmKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::attn::gemm {

namespace {

/// vpdpbusd: each i32 lane of `acc` plus the 4 products of its unsigned
/// bytes of `weights` with its signed bytes of `inputs`.
Value dotInt8(OpBuilder &b, Location loc, int64_t width, Value acc, Value weights,
              Value inputs) {
  return callIntrinsic(b, loc, acc.getType(),
                       width == 16 ? "llvm.x86.avx512.vpdpbusd.512"
                                   : "llvm.x86.avx512.vpdpbusd.256",
                       ValueRange{acc, weights, inputs});
}

/// vpmaddubsw: each i16 lane the sum of the products of its two unsigned
/// bytes of `a` with its two signed bytes of `s` (saturating, which the
/// callers' bounds rule out).
Value multiplyBytePairs(OpBuilder &b, Location loc, int64_t width, Value a, Value s) {
  auto type = VectorType::get({2 * width}, b.getI16Type());
  return callIntrinsic(b, loc, type,
                       width == 16 ? "llvm.x86.avx512.pmaddubs.w.512"
                                   : "llvm.x86.avx2.pmadd.ub.sw",
                       ValueRange{a, s});
}

/// vpmaddwd by ones: each i32 lane the sum of its two i16 lanes of `pairs`.
Value sumPairs(OpBuilder &b, Location loc, int64_t width, Value pairs) {
  auto type = VectorType::get({width}, b.getI32Type());
  Value ones = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(cast<VectorType>(pairs.getType()),
                                     b.getI16IntegerAttr(1)));
  return callIntrinsic(b, loc, type,
                       width == 16 ? "llvm.x86.avx512.pmaddw.d.512"
                                   : "llvm.x86.avx2.pmadd.wd",
                       ValueRange{pairs, ones});
}

/// `bytes` negated where `signs` is negative and zeroed where it is zero
/// (vpsignb; AVX-512 has none, so a compare and a masked negation there).
Value applySigns(OpBuilder &b, Location loc, int64_t width, Value bytes, Value signs) {
  if (width == 8)
    return callIntrinsic(b, loc, bytes.getType(), "llvm.x86.avx2.psign.b",
                         ValueRange{bytes, signs});
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(cast<VectorType>(bytes.getType()),
                                     b.getI8IntegerAttr(0)));
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, signs, zero);
  // Where the sign is zero the other factor, |signs|, is zero too.
  return arith::SelectOp::create(b, loc, negative,
                                 arith::SubIOp::create(b, loc, zero, bytes), bytes);
}

} // namespace

SmallVector<Value> emitInt8Products(OpBuilder &b, Location loc, const GemmKernel &g,
                                    ArrayRef<Value> rowIndex, Value block,
                                    int64_t rows) {
  const int64_t vectors = g.vectorsPerBlock, width = g.width;
  const int64_t weights = g.weight2 ? 2 : 1;
  const bool q8 = g.format == PackedFormat::Q8_0;
  const bool vnni = g.dot == Int8Dot::Vpdpbusd;
  // q4_0 without VNNI: a block's nibble products, at most 16 * 15 * 127 per
  // lane, add up in int16 and are widened once per block.
  const bool int16Sums = !vnni && !q8;
  const int64_t quadsPerBlock = kQuantBlock / 4;
  Type i8 = b.getI8Type(), i32 = b.getI32Type();
  auto intType = VectorType::get({width}, i32);
  auto byteType = VectorType::get({4 * width}, i8);
  auto sumType = int16Sums ? VectorType::get({2 * width}, b.getI16Type()) : intType;
  const int64_t perChain = weights * rows * vectors;
  // One row: two integer chains per block (even and odd quads) so the dot
  // products' latency does not bound it, where the registers hold them
  // (32 with AVX-512, 16 with AVX2) beside the weights and the inputs.
  const int64_t registers = width == 16 ? 32 : 16;
  const int64_t chains =
      rows == 1 && 3 * perChain + weights * vectors + 2 <= registers ? 2 : 1;
  auto accIndex = [&](int64_t w, int64_t r, int64_t j) {
    return (w * rows + r) * vectors + j;
  };
  SmallVector<Value> zeros(perChain, splat(b, loc, g.vectorType, 0.0));
  Value zeroSum = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(sumType, int16Sums ? b.getI16IntegerAttr(0)
                                                : b.getI32IntegerAttr(0)));
  auto byteSplat = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantOp::create(
        nb, l, DenseElementsAttr::get(byteType, nb.getI8IntegerAttr(v)));
  };
  const int64_t nr = g.blockSize;
  const int64_t scaleStart = quantWeightBytes(g.format) * nr;

  auto groupLoop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, g.groups),
      indexConstant(b, loc, 1), zeros,
      [&](OpBuilder &nb, Location l, Value group, ValueRange carried) {
        if (rows == 1 && g.prefetchRows > 0)
          emitPrefetch(nb, l, {g.slabs, g.slabs2}, g.blocks, g.groups, g.prefetchRows,
                       g.slabBytes, 1, block, group);
        SmallVector<Value> sums(chains * perChain, zeroSum);
        Value firstQuad = arith::MulIOp::create(nb, l, group,
                                                indexConstant(nb, l, quadsPerBlock));
        SmallVector<Value> packedBytes[2];
        for (int64_t q = 0; q < quadsPerBlock; ++q) {
          SmallVector<Value> w8[2];
          for (int64_t w = 0; w < weights; ++w) {
            Value slabs = w == 0 ? g.slabs : g.slabs2;
            for (int64_t j = 0; j < vectors; ++j) {
              if (q8) {
                Value bytes = vector::LoadOp::create(
                    nb, l, byteType, slabs,
                    ValueRange{block, group, indexConstant(nb, l, (q * nr + j * width) * 4)});
                // The stored byte is the weight plus 128: flipping its top
                // bit gives the signed weight.
                if (g.signedWeights())
                  bytes = arith::XOrIOp::create(nb, l, bytes, byteSplat(nb, l, -128));
                w8[w].push_back(bytes);
                continue;
              }
              // q4_0: quads q and q + 4 share bytes (low, high nibble).
              if (q < quadsPerBlock / 2)
                packedBytes[w].push_back(vector::LoadOp::create(
                    nb, l, byteType, slabs,
                    ValueRange{block, group, indexConstant(nb, l, (q * nr + j * width) * 4)}));
              Value bytes = packedBytes[w][(q % (quadsPerBlock / 2)) * vectors + j];
              w8[w].push_back(q < quadsPerBlock / 2
                                  ? arith::AndIOp::create(nb, l, bytes, byteSplat(nb, l, 15)).getResult()
                                  : arith::ShRUIOp::create(nb, l, bytes, byteSplat(nb, l, 4)).getResult());
            }
          }
          Value quad = arith::AddIOp::create(nb, l, firstQuad, indexConstant(nb, l, q));
          int64_t chain = q % chains;
          for (int64_t r = 0; r < rows; ++r) {
            Value word = memref::LoadOp::create(nb, l, g.quads, ValueRange{rowIndex[r], quad});
            Value inputs = vector::BitCastOp::create(
                nb, l, byteType, vector::BroadcastOp::create(nb, l, intType, word));
            Value magnitudes;
            if (g.signedWeights())
              magnitudes = math::AbsIOp::create(nb, l, inputs);
            for (int64_t w = 0; w < weights; ++w)
              for (int64_t j = 0; j < vectors; ++j) {
                Value &slot = sums[chain * perChain + accIndex(w, r, j)];
                if (vnni) {
                  slot = dotInt8(nb, l, width, slot, w8[w][j], inputs);
                } else if (int16Sums) {
                  slot = arith::AddIOp::create(
                      nb, l, slot, multiplyBytePairs(nb, l, width, w8[w][j], inputs));
                } else {
                  // x * w = |x| * (w with the sign of x): a pair of these is
                  // at most 2 * 127 * 127, inside int16.
                  Value pairs = multiplyBytePairs(
                      nb, l, width, magnitudes,
                      applySigns(nb, l, width, w8[w][j], inputs));
                  slot = arith::AddIOp::create(nb, l, slot, sumPairs(nb, l, width, pairs));
                }
              }
          }
        }
        if (int16Sums)
          for (Value &sum : sums)
            sum = sumPairs(nb, l, width, sum);
        // acc += (sum - offset * sum(inputs)) * d_weight * d_input.
        SmallVector<Value> acc(carried);
        auto halfType = VectorType::get({width}, nb.getF16Type());
        auto scaleBytesType = VectorType::get({2 * width}, i8);
        SmallVector<Value> weightScale[2];
        for (int64_t w = 0; w < weights; ++w)
          for (int64_t j = 0; j < vectors; ++j) {
            Value bytes = vector::LoadOp::create(
                nb, l, scaleBytesType, w == 0 ? g.slabs : g.slabs2,
                ValueRange{block, group, indexConstant(nb, l, scaleStart + 2 * j * width)});
            Value halves = vector::BitCastOp::create(nb, l, halfType, bytes);
            weightScale[w].push_back(
                arith::ExtFOp::create(nb, l, g.vectorType, halves).getResult());
          }
        for (int64_t r = 0; r < rows; ++r) {
          Value inputScale = vector::BroadcastOp::create(
              nb, l, g.vectorType,
              memref::LoadOp::create(nb, l, g.scales, ValueRange{rowIndex[r], group}));
          Value correction;
          if (g.corrections)
            correction = vector::BroadcastOp::create(
                nb, l, intType,
                memref::LoadOp::create(nb, l, g.corrections, ValueRange{rowIndex[r], group}));
          for (int64_t w = 0; w < weights; ++w)
            for (int64_t j = 0; j < vectors; ++j) {
              Value sum = sums[accIndex(w, r, j)];
              for (int64_t c = 1; c < chains; ++c)
                sum = arith::AddIOp::create(nb, l, sum, sums[c * perChain + accIndex(w, r, j)]);
              if (correction)
                sum = arith::SubIOp::create(nb, l, sum, correction);
              Value scale = arith::MulFOp::create(nb, l, weightScale[w][j], inputScale);
              Value &slot = acc[accIndex(w, r, j)];
              slot = vector::FMAOp::create(
                  nb, l, g.vectorType,
                  arith::SIToFPOp::create(nb, l, g.vectorType, sum), scale, slot);
            }
        }
        scf::YieldOp::create(nb, l, acc);
      });
  return SmallVector<Value>(groupLoop.getResults());
}

} // namespace mlir::attn::gemm
