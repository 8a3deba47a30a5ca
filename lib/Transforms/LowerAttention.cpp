//===- LowerAttention.cpp - attn.flash_attention to vector kernels --------===//
//
// FlashAttention-2 on the CPU. Work is split, through scf.parallel (OpenMP),
// over (KV head, block of query positions); the rows of a block are every
// (position, query head) pair that reads that KV head, so grouped-query
// heads share each key and value load. Per block:
//
//   Qt[d][r] = scale * q[row r]                         (transposed once)
//   for each key block of BK keys up to the causal diagonal:
//     St[j][r] = sum_d K[kb + j][d] * Qt[d][r]          (8 keys x 2 row vectors
//                                                        of FMAs in registers)
//     per row vector: masked max, m' = max(m, ...),
//       P = exp(S - m'), l = l * exp(m - m') + sum P    (vertical: no shuffles)
//     O[r][:] = exp(m - m') O[r][:] + sum_j P[j][r] V[kb + j][:]
//   out[row r] = O[r] / l[r]
//
// With attention sinks, each row's sink logit joins m and l only there, at
// the end: out = O e^(m - M) / (l e^(m - M) + e^(sink - M)), M = max(m, sink).
//
// Scores are computed keys-by-rows (St) so the softmax runs down vector
// lanes, and K is read in its stored row-major layout. A block with fewer
// rows than a vector (decode: one position, its query heads) instead takes
// dot products along head_dim, one row at a time.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/Utils/Activations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_LOWERATTENTIONPASS
#include "attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Builder helpers for one kernel.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;
  int64_t width;
  /// Softmax exponentials through expNonPositive's polynomial, not math.exp.
  bool fastExp;
  VectorType vectorType, maskType, positionType;

  KernelBuilder(OpBuilder &b, Location loc, int64_t width, bool fastExp)
      : b(b), loc(loc), width(width), fastExp(fastExp) {
    vectorType = VectorType::get({width}, b.getF32Type());
    maskType = VectorType::get({width}, b.getI1Type());
    positionType = VectorType::get({width}, b.getI32Type());
  }

  Value index(int64_t value) { return arith::ConstantIndexOp::create(b, loc, value); }
  Value f32(float value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }
  Value splat(float value) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vectorType, b.getF32FloatAttr(value)));
  }
  Value negInf() { return splat(-std::numeric_limits<float>::infinity()); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value minIndex(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value maxIndex(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value scratch(ArrayRef<int64_t> shape) {
    return memref::AllocaOp::create(b, loc, MemRefType::get(shape, b.getF32Type()));
  }
  Value load(Value memref, ValueRange indices) {
    return vector::LoadOp::create(b, loc, vectorType, memref, indices);
  }
  /// A vector (or one element, `scalar`) of a key or value memref as f32:
  /// a bf16 / f16 cache is widened on load, which is exact.
  Value loadKeyValue(Value memref, ValueRange indices, bool scalar = false) {
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    Value loaded =
        scalar ? memref::LoadOp::create(b, loc, memref, indices).getResult()
               : vector::LoadOp::create(b, loc, VectorType::get({width}, element),
                                        memref, indices)
                     .getResult();
    if (element.isF32())
      return loaded;
    return arith::ExtFOp::create(b, loc, scalar ? Type(b.getF32Type()) : vectorType,
                                 loaded);
  }
  void store(Value value, Value memref, ValueRange indices) {
    vector::StoreOp::create(b, loc, value, memref, indices);
  }
  Value broadcast(Value scalar) {
    return vector::BroadcastOp::create(b, loc, vectorType, scalar);
  }
  Value fma(Value x, Value y, Value acc) {
    return vector::FMAOp::create(b, loc, vectorType, x, y, acc);
  }
  /// e^x for the softmax's x <= 0 (a score minus a running max). With
  /// fastExp: x = max(x, -87) (e^-87 is 1.6e-38, still normal; a NaN stays
  /// NaN), n = round(x log2(e)) by adding 1.5 * 2^23 (whose low mantissa
  /// bits then hold n), r = x - n ln(2) in two FMA steps (Cody-Waite, so
  /// r keeps its precision at x = -87), e^r by its degree-7 Taylor
  /// polynomial (|r| <= ln(2)/2), and 2^n written into the exponent bits
  /// with integer ops (no float-to-int conversion to go wrong on NaN). Worst
  /// error 7.9e-8 relative over [-87, 0] (checked on 1.3e8 points against
  /// double exp), in about half the instructions of the generic
  /// approximation, which must also handle x > 0 and infinities.
  Value expNonPositive(Value x) {
    if (!fastExp)
      return math::ExpOp::create(b, loc, x);
    bool isVector = x.getType() == vectorType;
    Type intType = isVector ? Type(positionType) : Type(b.getI32Type());
    auto real = [&](float v) { return isVector ? splat(v) : f32(v); };
    auto integer = [&](int32_t v) -> Value {
      if (isVector)
        return arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(positionType, b.getI32IntegerAttr(v)));
      return arith::ConstantIntOp::create(b, loc, v, 32);
    };
    auto fmaOf = [&](Value p, Value q, Value acc) -> Value {
      return isVector ? fma(p, q, acc)
                      : math::FmaOp::create(b, loc, p, q, acc).getResult();
    };
    const float magic = 12582912.0f; // 1.5 * 2^23
    x = arith::MaximumFOp::create(b, loc, x, real(-87.0f));
    Value shifted = fmaOf(x, real(1.44269504088896341f), real(magic));
    Value n = arith::SubFOp::create(b, loc, shifted, real(magic));
    // ln(2) = 0.693147182464599609375 (the f32 nearest) - 1.9046543e-9.
    Value r = fmaOf(n, real(-0.693147182464599609375f), x);
    r = fmaOf(n, real(1.904654299957768e-9f), r);
    // 1 / k!, k = 7 .. 0.
    const float coefficients[] = {1.98412698e-4f, 1.38888889e-3f, 8.33333333e-3f,
                                  4.16666667e-2f, 1.66666667e-1f, 0.5f,
                                  1.0f,           1.0f};
    Value p = real(coefficients[0]);
    for (float c : ArrayRef<float>(coefficients).drop_front())
      p = fmaOf(p, r, real(c));
    Value bits = arith::BitcastOp::create(b, loc, intType, shifted);
    // (n + 127) << 23 with n = bits - bits(magic) = bits - 0x4B400000.
    Value exponent = arith::ShLIOp::create(
        b, loc, arith::AddIOp::create(b, loc, bits, integer(127 - 0x4B400000)),
        integer(23));
    Value scale = arith::BitcastOp::create(b, loc, x.getType(), exponent);
    return arith::MulFOp::create(b, loc, p, scale);
  }
  /// exp(x - m) where masked, else 0: masked scores are -inf, and the
  /// polynomial exp is not asked to return exactly 0 for them.
  Value maskedExp(Value x, Value m, Value visible) {
    Value e = expNonPositive(arith::SubFOp::create(b, loc, x, m));
    return arith::SelectOp::create(b, loc, visible, e, splat(0.0f));
  }
  /// m, or 0 where m is -inf (a row that has seen no key yet).
  Value safeMax(Value m) {
    Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                        m.getType() == vectorType ? negInf()
                                                                  : f32(-INFINITY));
    Value zero = m.getType() == vectorType ? splat(0.0f) : f32(0.0f);
    return arith::SelectOp::create(b, loc, empty, zero, m);
  }
  /// exp(mOld - safe(mNew)), and 0 where mOld is -inf.
  Value rescale(Value mOld, Value mNew) {
    bool isVector = mOld.getType() == vectorType;
    Value e = expNonPositive(arith::SubFOp::create(b, loc, mOld, safeMax(mNew)));
    Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mOld,
                                        isVector ? negInf() : f32(-INFINITY));
    return arith::SelectOp::create(b, loc, empty, isVector ? splat(0.0f) : f32(0.0f), e);
  }
  /// Combines `values` pairwise: depth log2(n) instead of a chain of n.
  Value treeReduce(SmallVector<Value> values,
                   function_ref<Value(Value, Value)> combine) {
    while (values.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < values.size(); i += 2)
        next.push_back(combine(values[i], values[i + 1]));
      if (values.size() % 2)
        next.push_back(values.back());
      values = std::move(next);
    }
    return values.front();
  }
  void forLoop(Value lb, Value ub, Value step,
               function_ref<void(Value)> body) {
    scf::ForOp::create(b, loc, lb, ub, step, ValueRange{},
                       [&](OpBuilder &nb, Location, Value iv, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPoint(scf::YieldOp::create(nb, loc));
                         body(iv);
                       });
  }
};

/// Shapes and operands of one attention op.
struct Attention {
  Value query, key, value, output;
  int64_t heads, kvHeads, group, headDim;
  float scale;
  bool causal;
  /// Keys a query sees with a sliding window; 0: no window.
  int64_t window = 0;
  /// ALiBi slopes, one per query head; empty: none.
  ArrayRef<float> alibi;
  /// Cap of the scaled scores, c tanh(s / c) before ALiBi; 0: none.
  float softcap = 0;
  /// [heads] memref of attention sinks; null: none.
  Value sinks;
  /// Decode: prefetch the next key block's keys and values.
  bool prefetch = true;
};

/// The ALiBi slope of query head `head`, from a constant vector of all of
/// them (read once per row and block).
Value alibiSlope(KernelBuilder &k, const Attention &a, Value head) {
  auto type = VectorType::get({a.heads}, k.b.getF32Type());
  Value slopes = arith::ConstantOp::create(
      k.b, k.loc, DenseElementsAttr::get(type, a.alibi));
  return vector::ExtractOp::create(k.b, k.loc, slopes, ArrayRef<OpFoldResult>{head});
}

/// c * tanh(s / c) for a vector of scaled scores (Gemma 2's attention logit
/// cap); the tanh becomes a polynomial with fast-math.
Value softcapScores(KernelBuilder &k, const Attention &a, Value scores) {
  return buildSoftcap(k.b, k.loc, scores, a.softcap);
}

/// slope * (key - position) for i32 key and position vectors: the distance
/// is exact as an integer, so the bias is rounded once.
Value alibiBias(KernelBuilder &k, Value slope, Value key, Value position) {
  Value distance = arith::SubIOp::create(k.b, k.loc, key, position);
  Value asFloat = arith::SIToFPOp::create(k.b, k.loc, k.vectorType, distance);
  return arith::MulFOp::create(k.b, k.loc, slope, asFloat);
}

/// Rows of the output (position, query head) for block row r, as values.
struct RowCoordinates {
  Value position, column;
};

RowCoordinates rowCoordinates(KernelBuilder &k, const Attention &a, Value kvHead,
                              Value firstPosition, Value row) {
  Value group = k.index(a.group);
  Value position = k.add(firstPosition, arith::DivUIOp::create(k.b, k.loc, row, group));
  Value head = k.add(k.mul(kvHead, group), arith::RemUIOp::create(k.b, k.loc, row, group));
  return {position, k.mul(head, k.index(a.headDim))};
}

/// The query head of a block's row `r` (rows are position-major, the
/// group's query heads within).
Value queryHeadOfRow(KernelBuilder &k, const Attention &a, Value kvHead, Value r) {
  return k.add(k.mul(kvHead, k.index(a.group)),
               arith::RemUIOp::create(k.b, k.loc, r, k.index(a.group)));
}

/// What a row's output accumulator is multiplied by, for a row whose
/// running max is m and sum l: 1 / l (0 where l = 0: no key seen), or with
/// a sink logit s, e^(m - M) / (l e^(m - M) + e^(s - M)) for M = max(m, s)
/// (0 only when nothing was seen and s = -inf).
Value rowNormalization(KernelBuilder &k, const Attention &a, Value head,
                       Value m, Value l) {
  Value keep = k.f32(1.0f);
  if (a.sinks) {
    Value sink = memref::LoadOp::create(k.b, k.loc, a.sinks, ValueRange{head});
    Value top = arith::MaximumFOp::create(k.b, k.loc, m, sink);
    keep = k.rescale(m, top);
    l = math::FmaOp::create(k.b, k.loc, l, keep, k.rescale(sink, top));
  }
  Value zero = arith::CmpFOp::create(k.b, k.loc, arith::CmpFPredicate::OEQ, l,
                                     k.f32(0.0f));
  if (a.sinks)
    return arith::SelectOp::create(k.b, k.loc, zero, k.f32(0.0f),
                                   arith::DivFOp::create(k.b, k.loc, keep, l));
  return arith::SelectOp::create(
      k.b, k.loc, zero, k.f32(0.0f),
      arith::DivFOp::create(k.b, k.loc, k.f32(1.0f), l));
}

/// out[row] = O[r] / l[r] (0 where l = 0), rows [0, validRows).
void storeOutput(KernelBuilder &k, const Attention &a, Value kvHead,
                 Value firstPosition, Value validRows, Value outAcc,
                 Value maxima, Value sums) {
  k.forLoop(k.index(0), validRows, k.index(1), [&](Value r) {
    RowCoordinates row = rowCoordinates(k, a, kvHead, firstPosition, r);
    Value l = memref::LoadOp::create(k.b, k.loc, sums, ValueRange{r});
    Value m = memref::LoadOp::create(k.b, k.loc, maxima, ValueRange{r});
    Value inverse = rowNormalization(k, a, queryHeadOfRow(k, a, kvHead, r), m, l);
    Value scale = k.broadcast(inverse);
    for (int64_t c = 0; c < a.headDim / k.width; ++c) {
      Value v = k.load(outAcc, ValueRange{r, k.index(c * k.width)});
      k.store(arith::MulFOp::create(k.b, k.loc, v, scale), a.output,
              ValueRange{row.position, k.add(row.column, k.index(c * k.width))});
    }
  });
}

/// O[r][:] = alpha[r] O[r][:] + sum_{j < keys} P(j, r) V[kb + j][kvCol + :]
/// for rows [0, rows), in register tiles of tileRows x head_dim. `prob(j, r)`
/// loads P.
void accumulatePV(KernelBuilder &k, const Attention &a, int64_t rows,
                  Value outAcc, Value alpha, Value kb, Value keys, Value kvCol,
                  function_ref<Value(Value, Value)> prob) {
  int64_t vectors = a.headDim / k.width;
  // Accumulators in registers: 16 of AVX-512's 32 zmm (enough independent
  // FMAs to cover their latency, four V loads per four broadcasts), 8 of
  // AVX2's 16 ymm.
  const int64_t accumulators = k.width >= 16 ? 16 : 8;
  int64_t tileRows = 1;
  while (tileRows * 2 * vectors <= accumulators && rows % (tileRows * 2) == 0)
    tileRows *= 2;
  k.forLoop(k.index(0), k.index(rows), k.index(tileRows), [&](Value r0) {
    SmallVector<Value> rowIndex, acc;
    for (int64_t t = 0; t < tileRows; ++t) {
      Value r = k.add(r0, k.index(t));
      rowIndex.push_back(r);
      Value scale = k.broadcast(memref::LoadOp::create(k.b, k.loc, alpha, ValueRange{r}));
      for (int64_t c = 0; c < vectors; ++c)
        acc.push_back(arith::MulFOp::create(
            k.b, k.loc, k.load(outAcc, ValueRange{r, k.index(c * k.width)}), scale));
    }
    auto loop = scf::ForOp::create(
        k.b, k.loc, k.index(0), keys, k.index(1), acc,
        [&](OpBuilder &nb, Location, Value j, ValueRange carried) {
          OpBuilder::InsertionGuard guard(k.b);
          k.b.setInsertionPointToEnd(nb.getInsertionBlock());
          SmallVector<Value> next(carried);
          Value keyRow = k.add(kb, j);
          SmallVector<Value> v;
          for (int64_t c = 0; c < vectors; ++c)
            v.push_back(k.loadKeyValue(
                a.value, ValueRange{keyRow, k.add(kvCol, k.index(c * k.width))}));
          for (int64_t t = 0; t < tileRows; ++t) {
            Value p = k.broadcast(prob(j, rowIndex[t]));
            for (int64_t c = 0; c < vectors; ++c)
              next[t * vectors + c] = k.fma(p, v[c], next[t * vectors + c]);
          }
          scf::YieldOp::create(k.b, k.loc, next);
        });
    for (int64_t t = 0; t < tileRows; ++t)
      for (int64_t c = 0; c < vectors; ++c)
        k.store(loop.getResult(t * vectors + c), outAcc,
                ValueRange{rowIndex[t], k.index(c * k.width)});
  });
}

/// Many rows per block (prefill): scores keys-by-rows, softmax down lanes.
void emitMultiRowBlock(KernelBuilder &k, const Attention &a, Value kvHead,
                       Value block, int64_t positionsPerBlock, Value seqQ,
                       Value kvLen) {
  const int64_t w = k.width, d = a.headDim;
  const int64_t rows = positionsPerBlock * a.group;
  const int64_t paddedRows = (rows + w - 1) / w * w;
  const int64_t keyBlock = 2 * w;
  Value firstPosition = k.mul(block, k.index(positionsPerBlock));
  Value positions = k.minIndex(k.index(positionsPerBlock),
                               arith::SubIOp::create(k.b, k.loc, seqQ, firstPosition));
  Value validRows = k.mul(positions, k.index(a.group));
  Value diagonal = arith::SubIOp::create(k.b, k.loc, kvLen, seqQ);
  Value kvCol = k.mul(kvHead, k.index(d));

  Value qt = k.scratch({d, paddedRows});
  Value outAcc = k.scratch({paddedRows, d});
  Value maxima = k.scratch({paddedRows}), sums = k.scratch({paddedRows}),
        alpha = k.scratch({paddedRows});
  Value scores = k.scratch({keyBlock, paddedRows});
  auto positionMemref = MemRefType::get({paddedRows}, k.b.getI32Type());
  Value rowPosition = memref::AllocaOp::create(k.b, k.loc, positionMemref);
  Value rowSlope = a.alibi.empty() ? Value() : k.scratch({paddedRows});

  // Row state, the transposed scaled queries, and each row's last visible key.
  Value scale = k.f32(a.scale);
  k.forLoop(k.index(0), k.index(paddedRows), k.index(1), [&](Value r) {
    memref::StoreOp::create(k.b, k.loc, k.f32(-INFINITY), maxima, ValueRange{r});
    memref::StoreOp::create(k.b, k.loc, k.f32(0.0f), sums, ValueRange{r});
    for (int64_t c = 0; c < d / w; ++c)
      k.store(k.splat(0.0f), outAcc, ValueRange{r, k.index(c * w)});
    RowCoordinates row = rowCoordinates(k, a, kvHead, firstPosition, r);
    Value last = k.add(row.position, diagonal);
    memref::StoreOp::create(
        k.b, k.loc, arith::IndexCastOp::create(k.b, k.loc, k.b.getI32Type(), last),
        rowPosition, ValueRange{r});
    if (rowSlope) {
      Value head = k.add(k.mul(kvHead, k.index(a.group)),
                         arith::RemUIOp::create(k.b, k.loc, r, k.index(a.group)));
      memref::StoreOp::create(k.b, k.loc, alibiSlope(k, a, head), rowSlope,
                              ValueRange{r});
    }
    // Rows past the block's last position read position 0's query and are
    // never stored.
    Value valid = arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::slt, r, validRows);
    Value source = arith::SelectOp::create(k.b, k.loc, valid, row.position, k.index(0));
    k.forLoop(k.index(0), k.index(d), k.index(1), [&](Value dd) {
      Value q = memref::LoadOp::create(k.b, k.loc, a.query,
                                       ValueRange{source, k.add(row.column, dd)});
      memref::StoreOp::create(k.b, k.loc, arith::MulFOp::create(k.b, k.loc, q, scale),
                              qt, ValueRange{dd, r});
    });
  });

  // Keys past the diagonal of the block's last position, and before the
  // window of its first, are never visited.
  Value kvEnd = kvLen;
  if (a.causal)
    kvEnd = k.minIndex(kvLen, k.maxIndex(k.add(k.add(firstPosition, positions), diagonal),
                                         k.index(0)));
  Value kvBegin = k.index(0);
  if (a.window)
    kvBegin = k.maxIndex(kvBegin, arith::SubIOp::create(
                                      k.b, k.loc, k.add(firstPosition, diagonal),
                                      k.index(a.window - 1)));
  Value lastKey = arith::SubIOp::create(k.b, k.loc, kvLen, k.index(1));
  k.forLoop(kvBegin, kvEnd, k.index(keyBlock), [&](Value kb) {
    Value keys = k.minIndex(k.index(keyBlock), arith::SubIOp::create(k.b, k.loc, kvEnd, kb));
    // St[j][r] = K[kb + j] . Qt[:, r], 8 keys x 2 row vectors at a time.
    const int64_t tileKeys = 8, tileVectors = paddedRows % (2 * w) == 0 ? 2 : 1;
    for (int64_t j0 = 0; j0 < keyBlock; j0 += tileKeys) {
      SmallVector<Value> keyRows;
      for (int64_t t = 0; t < tileKeys; ++t)
        keyRows.push_back(k.minIndex(k.add(kb, k.index(j0 + t)), lastKey));
      k.forLoop(k.index(0), k.index(paddedRows), k.index(tileVectors * w), [&](Value r0) {
        // The dot products accumulate onto the ALiBi term, or onto zero;
        // with a softcap the term is added after the cap.
        SmallVector<Value> init(tileKeys * tileVectors, k.splat(0.0f));
        SmallVector<Value> alibiTerms;
        if (rowSlope) {
          for (int64_t c = 0; c < tileVectors; ++c) {
            Value r = k.add(r0, k.index(c * w));
            Value slope = k.load(rowSlope, ValueRange{r});
            Value position = vector::LoadOp::create(k.b, k.loc, k.positionType,
                                                    rowPosition, ValueRange{r});
            for (int64_t t = 0; t < tileKeys; ++t) {
              Value key = vector::BroadcastOp::create(
                  k.b, k.loc, k.positionType,
                  arith::IndexCastOp::create(k.b, k.loc, k.b.getI32Type(),
                                             k.add(kb, k.index(j0 + t))));
              init[t * tileVectors + c] = alibiBias(k, slope, key, position);
            }
          }
          if (a.softcap) {
            alibiTerms = std::move(init);
            init.assign(tileKeys * tileVectors, k.splat(0.0f));
          }
        }
        auto loop = scf::ForOp::create(
            k.b, k.loc, k.index(0), k.index(d), k.index(1), init,
            [&](OpBuilder &nb, Location, Value dd, ValueRange carried) {
              OpBuilder::InsertionGuard guard(k.b);
              k.b.setInsertionPointToEnd(nb.getInsertionBlock());
              SmallVector<Value> next(carried);
              SmallVector<Value> q;
              for (int64_t c = 0; c < tileVectors; ++c)
                q.push_back(k.load(qt, ValueRange{dd, k.add(r0, k.index(c * w))}));
              Value col = k.add(kvCol, dd);
              for (int64_t t = 0; t < tileKeys; ++t) {
                Value kv = k.broadcast(
                    k.loadKeyValue(a.key, ValueRange{keyRows[t], col}, /*scalar=*/true));
                for (int64_t c = 0; c < tileVectors; ++c)
                  next[t * tileVectors + c] = k.fma(kv, q[c], next[t * tileVectors + c]);
              }
              scf::YieldOp::create(k.b, k.loc, next);
            });
        for (int64_t t = 0; t < tileKeys; ++t)
          for (int64_t c = 0; c < tileVectors; ++c) {
            Value score = loop.getResult(t * tileVectors + c);
            if (a.softcap) {
              score = softcapScores(k, a, score);
              if (!alibiTerms.empty())
                score = arith::AddFOp::create(k.b, k.loc, score,
                                              alibiTerms[t * tileVectors + c]);
            }
            k.store(score, scores,
                    ValueRange{k.index(j0 + t), k.add(r0, k.index(c * w))});
          }
      });
    }

    // Online softmax down the lanes, one vector of rows at a time. `masked`:
    // key kb + j must exist in this block (j < keys) and, when causal, lie at
    // or before the row's position (and within its window); blocks wholly
    // below the diagonal (and inside every row's window) skip those tests.
    Value keysI32 = arith::IndexCastOp::create(k.b, k.loc, k.b.getI32Type(), keys);
    Value kbI32 = arith::IndexCastOp::create(k.b, k.loc, k.b.getI32Type(), kb);
    auto softmax = [&](bool masked) {
      k.forLoop(k.index(0), k.index(paddedRows), k.index(w), [&](Value r0) {
        Value last = masked ? vector::LoadOp::create(k.b, k.loc, k.positionType,
                                                     rowPosition, ValueRange{r0})
                            : Value();
        Value firstInWindow;
        if (masked && a.window)
          firstInWindow = arith::SubIOp::create(
              k.b, k.loc, last,
              arith::ConstantOp::create(
                  k.b, k.loc,
                  DenseElementsAttr::get(k.positionType,
                                         k.b.getI32IntegerAttr(a.window - 1))));
        Value mOld = k.load(maxima, ValueRange{r0});
        SmallVector<Value> visible(keyBlock), s(keyBlock), maxTerms;
        for (int64_t j = 0; j < keyBlock; ++j) {
          s[j] = k.load(scores, ValueRange{k.index(j), r0});
          if (!masked) {
            maxTerms.push_back(s[j]);
            continue;
          }
          Value inBlock = arith::CmpIOp::create(
              k.b, k.loc, arith::CmpIPredicate::slt,
              arith::ConstantIntOp::create(k.b, k.loc, j, 32), keysI32);
          visible[j] = vector::BroadcastOp::create(k.b, k.loc, k.maskType, inBlock);
          if (a.causal) {
            Value key = vector::BroadcastOp::create(
                k.b, k.loc, k.positionType,
                arith::AddIOp::create(k.b, k.loc, kbI32,
                                      arith::ConstantIntOp::create(k.b, k.loc, j, 32)));
            Value beforeRow = arith::CmpIOp::create(
                k.b, k.loc, arith::CmpIPredicate::sle, key, last);
            visible[j] = arith::AndIOp::create(k.b, k.loc, visible[j], beforeRow);
            if (firstInWindow)
              visible[j] = arith::AndIOp::create(
                  k.b, k.loc, visible[j],
                  arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::sge, key,
                                        firstInWindow));
          }
          maxTerms.push_back(
              arith::SelectOp::create(k.b, k.loc, visible[j], s[j], k.negInf()));
        }
        // Pairwise trees: a chain of keyBlock dependent max/add ops would
        // bound this loop by their latency.
        maxTerms.push_back(mOld);
        Value mNew = k.treeReduce(maxTerms, [&](Value x, Value y) {
          return arith::MaximumFOp::create(k.b, k.loc, x, y);
        });
        Value safe = k.safeMax(mNew);
        SmallVector<Value> probabilities;
        for (int64_t j = 0; j < keyBlock; ++j) {
          // Reloaded (L1) rather than kept live: keyBlock vectors would not
          // fit in the register file.
          Value score = k.load(scores, ValueRange{k.index(j), r0});
          Value p = masked ? k.maskedExp(score, safe, visible[j])
                           : k.expNonPositive(
                                 arith::SubFOp::create(k.b, k.loc, score, safe));
          k.store(p, scores, ValueRange{k.index(j), r0});
          probabilities.push_back(p);
        }
        Value sum = k.treeReduce(probabilities, [&](Value x, Value y) {
          return arith::AddFOp::create(k.b, k.loc, x, y);
        });
        Value rescale = k.rescale(mOld, mNew);
        Value lOld = k.load(sums, ValueRange{r0});
        k.store(k.fma(lOld, rescale, sum), sums, ValueRange{r0});
        k.store(mNew, maxima, ValueRange{r0});
        k.store(rescale, alpha, ValueRange{r0});
      });
    };
    // Every key of the block visible to every row: a full block whose last
    // key is at or before the first row's position (rows only grow).
    Value fullBlock = arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::eq,
                                            keys, k.index(keyBlock));
    if (a.causal) {
      Value blockLast = k.add(kb, k.index(keyBlock - 1));
      Value firstLast = k.add(firstPosition, diagonal);
      fullBlock = arith::AndIOp::create(
          k.b, k.loc, fullBlock,
          arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::sle, blockLast,
                                firstLast));
    }
    if (a.window) {
      // ... and whose first key is in the window of the last valid row.
      Value lastPosition = k.add(k.add(firstPosition, positions), diagonal);
      Value lastFirst = arith::SubIOp::create(k.b, k.loc, lastPosition,
                                              k.index(a.window));
      fullBlock = arith::AndIOp::create(
          k.b, k.loc, fullBlock,
          arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::sge, kb, lastFirst));
    }
    scf::IfOp::create(
        k.b, k.loc, fullBlock,
        [&](OpBuilder &tb, Location) {
          OpBuilder::InsertionGuard guard(k.b);
          k.b.setInsertionPoint(scf::YieldOp::create(tb, k.loc));
          softmax(/*masked=*/false);
        },
        [&](OpBuilder &eb, Location) {
          OpBuilder::InsertionGuard guard(k.b);
          k.b.setInsertionPoint(scf::YieldOp::create(eb, k.loc));
          softmax(/*masked=*/true);
        });

    accumulatePV(k, a, paddedRows, outAcc, alpha, kb, keys, kvCol,
                 [&](Value j, Value r) {
                   return memref::LoadOp::create(k.b, k.loc, scores, ValueRange{j, r});
                 });
  });
  storeOutput(k, a, kvHead, firstPosition, validRows, outAcc, maxima, sums);
}

/// Where a decode task's state goes when it has seen its keys: its split's
/// slot in the partial buffers (flash-decoding), which combineSplits reads.
struct PartialSink {
  /// [kv_heads, splits, rows, head_dim] unnormalized outputs, and
  /// [kv_heads, splits, rows] running maxima and sums.
  Value outputs, maxima, sums;
  Value split;
};

/// One KV head's running state in a decode task: views of the task's
/// scratch at that head's rows.
struct HeadState {
  Value kvHead, kvCol, qs, outAcc, maxima, sums, alpha;
};

/// Few rows (decode): dot products along head_dim, softmax across lanes,
/// over keys [keyBegin, keyEnd), for the KV heads [headBegin, headBegin +
/// headCount) (at most maxHeads). Each key block visits all of them before
/// the next block: a KV row holds every head's key side by side, so a long
/// cache is then read along its rows, not as one head's strided slice
/// after another's (a few cache lines per kv_heads * head_dim elements,
/// too short a run for the hardware prefetchers).
void emitFewRowBlock(KernelBuilder &k, const Attention &a, Value headBegin,
                     Value headCount, int64_t maxHeads, int64_t seqQ, Value kvLen,
                     Value keyBegin, Value keyEnd, const PartialSink &sink) {
  const int64_t w = k.width, d = a.headDim, vectors = d / w;
  const int64_t rows = seqQ * a.group;
  const int64_t keyBlock = 2 * w;
  Value diagonal = arith::SubIOp::create(k.b, k.loc, kvLen, k.index(seqQ));
  Value allQs = k.scratch({maxHeads * rows, d}), allOut = k.scratch({maxHeads * rows, d});
  Value allMaxima = k.scratch({maxHeads * rows}), allSums = k.scratch({maxHeads * rows}),
        allAlpha = k.scratch({maxHeads * rows});
  Value probs = k.scratch({rows, keyBlock});
  Value scale = k.splat(a.scale);
  auto headState = [&](Value h) {
    OpFoldResult first = k.mul(h, k.index(rows));
    auto one = k.b.getIndexAttr(1);
    auto view2D = [&](Value all) -> Value {
      return memref::SubViewOp::create(
          k.b, k.loc, all, ArrayRef<OpFoldResult>{first, k.b.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{k.b.getIndexAttr(rows), k.b.getIndexAttr(d)},
          ArrayRef<OpFoldResult>{one, one});
    };
    auto view1D = [&](Value all) -> Value {
      return memref::SubViewOp::create(k.b, k.loc, all, ArrayRef<OpFoldResult>{first},
                                       ArrayRef<OpFoldResult>{k.b.getIndexAttr(rows)},
                                       ArrayRef<OpFoldResult>{one});
    };
    HeadState st;
    st.kvHead = k.add(headBegin, h);
    st.kvCol = k.mul(st.kvHead, k.index(d));
    st.qs = view2D(allQs);
    st.outAcc = view2D(allOut);
    st.maxima = view1D(allMaxima);
    st.sums = view1D(allSums);
    st.alpha = view1D(allAlpha);
    return st;
  };
  auto asI32 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(k.b, k.loc, k.b.getI32Type(), index);
  };
  // Per row: the last visible key, the first one in its window, and its
  // position (the same for every head).
  SmallVector<Value> lastKeyOfRow, firstKeyOfRow, positionOfRow;
  for (int64_t r = 0; r < rows; ++r) {
    Value position =
        k.add(rowCoordinates(k, a, k.index(0), k.index(0), k.index(r)).position, diagonal);
    Value last = a.causal ? position
                          : arith::SubIOp::create(k.b, k.loc, kvLen, k.index(1));
    lastKeyOfRow.push_back(asI32(last));
    if (a.window)
      firstKeyOfRow.push_back(
          asI32(arith::SubIOp::create(k.b, k.loc, position, k.index(a.window - 1))));
    if (!a.alibi.empty())
      positionOfRow.push_back(asI32(position));
  }
  k.forLoop(k.index(0), headCount, k.index(1), [&](Value h) {
    HeadState st = headState(h);
    for (int64_t r = 0; r < rows; ++r) {
      RowCoordinates row = rowCoordinates(k, a, st.kvHead, k.index(0), k.index(r));
      for (int64_t c = 0; c < vectors; ++c) {
        Value q = k.load(a.query, ValueRange{row.position, k.add(row.column, k.index(c * w))});
        k.store(arith::MulFOp::create(k.b, k.loc, q, scale), st.qs,
                ValueRange{k.index(r), k.index(c * w)});
        k.store(k.splat(0.0f), st.outAcc, ValueRange{k.index(r), k.index(c * w)});
      }
      memref::StoreOp::create(k.b, k.loc, k.f32(-INFINITY), st.maxima, ValueRange{k.index(r)});
      memref::StoreOp::create(k.b, k.loc, k.f32(0.0f), st.sums, ValueRange{k.index(r)});
    }
  });
  Value lastKey = arith::SubIOp::create(k.b, k.loc, kvLen, k.index(1));
  auto lane = VectorType::get({w}, k.b.getI32Type());
  // Even along rows, the misses in flight bound how fast a cache larger
  // than the caches streams: each head asks for its lines of the next block.
  int64_t elementBytes =
      cast<MemRefType>(a.key.getType()).getElementTypeBitWidth() / 8;
  int64_t lineElements = 64 / elementBytes;
  auto prefetchNextBlock = [&](Value kb, Value kvCol) {
    Value next = k.add(kb, k.index(keyBlock));
    k.forLoop(k.index(0), k.index(keyBlock), k.index(1), [&](Value j) {
      Value row = k.minIndex(k.add(next, j), lastKey);
      for (Value rowsOf : {a.key, a.value})
        for (int64_t e = 0; e < d; e += lineElements)
          memref::PrefetchOp::create(k.b, k.loc, rowsOf,
                                     ValueRange{row, k.add(kvCol, k.index(e))},
                                     /*isWrite=*/false, /*localityHint=*/3,
                                     /*isDataCache=*/true);
    });
  };
  k.forLoop(keyBegin, keyEnd, k.index(keyBlock), [&](Value kb) {
    Value keys = k.minIndex(k.index(keyBlock), arith::SubIOp::create(k.b, k.loc, keyEnd, kb));
    Value kbI32 = arith::IndexCastOp::create(k.b, k.loc, k.b.getI32Type(), kb);
    Value keysI32 = arith::IndexCastOp::create(k.b, k.loc, k.b.getI32Type(), keys);
    Value step = vector::StepOp::create(k.b, k.loc, VectorType::get({w}, k.b.getIndexType()));
    Value laneIndex = arith::IndexCastOp::create(k.b, k.loc, lane, step);
    k.forLoop(k.index(0), headCount, k.index(1), [&](Value h) {
      HeadState st = headState(h);
      if (a.prefetch)
        prefetchNextBlock(kb, st.kvCol);
      for (int64_t r = 0; r < rows; ++r) {
        Value rr = k.index(r);
        // s[j] = q . K[kb + j] for the block's keys (clamped rows are masked).
        for (int64_t j = 0; j < keyBlock; ++j) {
          Value keyRow = k.minIndex(k.add(kb, k.index(j)), lastKey);
          Value acc = k.splat(0.0f);
          for (int64_t c = 0; c < vectors; ++c)
            acc = k.fma(k.load(st.qs, ValueRange{rr, k.index(c * w)}),
                        k.loadKeyValue(a.key, ValueRange{keyRow, k.add(st.kvCol, k.index(c * w))}),
                        acc);
          Value dot = vector::ReductionOp::create(k.b, k.loc, vector::CombiningKind::ADD, acc);
          memref::StoreOp::create(k.b, k.loc, dot, probs, ValueRange{rr, k.index(j)});
        }
        Value slope;
        if (!a.alibi.empty()) {
          Value head = k.add(k.mul(st.kvHead, k.index(a.group)), k.index(r % a.group));
          slope = k.broadcast(alibiSlope(k, a, head));
        }
        Value mOld = memref::LoadOp::create(k.b, k.loc, st.maxima, ValueRange{rr});
        SmallVector<Value> s, visible;
        Value blockMax = k.f32(-INFINITY);
        for (int64_t v = 0; v < keyBlock / w; ++v) {
          Value offset = vector::BroadcastOp::create(
              k.b, k.loc, lane,
              arith::AddIOp::create(k.b, k.loc, kbI32,
                                    arith::ConstantIntOp::create(k.b, k.loc, v * w, 32)));
          Value key = arith::AddIOp::create(k.b, k.loc, laneIndex, offset);
          Value inBlock = arith::CmpIOp::create(
              k.b, k.loc, arith::CmpIPredicate::slt,
              arith::SubIOp::create(k.b, k.loc, key,
                                    vector::BroadcastOp::create(k.b, k.loc, lane, kbI32)),
              vector::BroadcastOp::create(k.b, k.loc, lane, keysI32));
          Value beforeRow = arith::CmpIOp::create(
              k.b, k.loc, arith::CmpIPredicate::sle, key,
              vector::BroadcastOp::create(k.b, k.loc, lane, lastKeyOfRow[r]));
          Value seen = arith::AndIOp::create(k.b, k.loc, inBlock, beforeRow);
          if (a.window)
            seen = arith::AndIOp::create(
                k.b, k.loc, seen,
                arith::CmpIOp::create(
                    k.b, k.loc, arith::CmpIPredicate::sge, key,
                    vector::BroadcastOp::create(k.b, k.loc, lane, firstKeyOfRow[r])));
          visible.push_back(seen);
          Value score = k.load(probs, ValueRange{rr, k.index(v * w)});
          if (a.softcap)
            score = softcapScores(k, a, score);
          if (!a.alibi.empty())
            score = arith::AddFOp::create(
                k.b, k.loc, score,
                alibiBias(k, slope, key,
                          vector::BroadcastOp::create(k.b, k.loc, lane, positionOfRow[r])));
          s.push_back(score);
          Value masked = arith::SelectOp::create(k.b, k.loc, visible.back(), s.back(), k.negInf());
          blockMax = arith::MaximumFOp::create(
              k.b, k.loc, blockMax,
              vector::ReductionOp::create(k.b, k.loc, vector::CombiningKind::MAXIMUMF, masked));
        }
        Value mNew = arith::MaximumFOp::create(k.b, k.loc, mOld, blockMax);
        Value safe = k.broadcast(k.safeMax(mNew));
        Value sum = k.f32(0.0f);
        for (int64_t v = 0; v < keyBlock / w; ++v) {
          Value p = k.maskedExp(s[v], safe, visible[v]);
          k.store(p, probs, ValueRange{rr, k.index(v * w)});
          sum = arith::AddFOp::create(
              k.b, k.loc, sum,
              vector::ReductionOp::create(k.b, k.loc, vector::CombiningKind::ADD, p));
        }
        Value rescale = k.rescale(mOld, mNew);
        Value lOld = memref::LoadOp::create(k.b, k.loc, st.sums, ValueRange{rr});
        Value lNew = arith::AddFOp::create(
            k.b, k.loc, arith::MulFOp::create(k.b, k.loc, lOld, rescale), sum);
        memref::StoreOp::create(k.b, k.loc, lNew, st.sums, ValueRange{rr});
        memref::StoreOp::create(k.b, k.loc, mNew, st.maxima, ValueRange{rr});
        memref::StoreOp::create(k.b, k.loc, rescale, st.alpha, ValueRange{rr});
      }
      accumulatePV(k, a, rows, st.outAcc, st.alpha, kb, keys, st.kvCol, [&](Value j, Value r) {
        return memref::LoadOp::create(k.b, k.loc, probs, ValueRange{r, j});
      });
    });
  });
  k.forLoop(k.index(0), headCount, k.index(1), [&](Value h) {
    HeadState st = headState(h);
    for (int64_t r = 0; r < rows; ++r) {
      Value rr = k.index(r);
      for (int64_t c = 0; c < vectors; ++c)
        k.store(k.load(st.outAcc, ValueRange{rr, k.index(c * w)}), sink.outputs,
                ValueRange{st.kvHead, sink.split, rr, k.index(c * w)});
      for (auto [from, to] : {std::pair{st.maxima, sink.maxima}, {st.sums, sink.sums}})
        memref::StoreOp::create(k.b, k.loc,
                                memref::LoadOp::create(k.b, k.loc, from, ValueRange{rr}),
                                to, ValueRange{st.kvHead, sink.split, rr});
    }
  });
}

/// Combines the splits of one KV head: with M the largest running max,
/// out = sum_s exp(m_s - M) O_s / sum_s exp(m_s - M) l_s (0 for a row that
/// saw no key; a split whose row saw none has m_s = -inf and weight 0).
void combineSplits(KernelBuilder &k, const Attention &a, Value kvHead,
                   int64_t rows, Value splits, const PartialSink &sink) {
  const int64_t w = k.width, vectors = a.headDim / w;
  Value zero = k.index(0), one = k.index(1);
  for (int64_t r = 0; r < rows; ++r) {
    Value rr = k.index(r);
    auto maxLoop = scf::ForOp::create(
        k.b, k.loc, zero, splits, one, ValueRange{k.f32(-INFINITY)},
        [&](OpBuilder &nb, Location l, Value s, ValueRange carried) {
          Value m = memref::LoadOp::create(nb, l, sink.maxima, ValueRange{kvHead, s, rr});
          scf::YieldOp::create(nb, l, ValueRange{arith::MaximumFOp::create(nb, l, carried[0], m)});
        });
    Value largest = maxLoop.getResult(0);
    SmallVector<Value> init(vectors, k.splat(0.0f));
    init.push_back(k.f32(0.0f));
    auto sumLoop = scf::ForOp::create(
        k.b, k.loc, zero, splits, one, init,
        [&](OpBuilder &nb, Location, Value s, ValueRange carried) {
          OpBuilder::InsertionGuard guard(k.b);
          k.b.setInsertionPointToEnd(nb.getInsertionBlock());
          Value m = memref::LoadOp::create(k.b, k.loc, sink.maxima, ValueRange{kvHead, s, rr});
          Value weight = k.rescale(m, largest);
          SmallVector<Value> next;
          Value scale = k.broadcast(weight);
          for (int64_t c = 0; c < vectors; ++c)
            next.push_back(k.fma(k.load(sink.outputs, ValueRange{kvHead, s, rr, k.index(c * w)}),
                                 scale, carried[c]));
          Value l = memref::LoadOp::create(k.b, k.loc, sink.sums, ValueRange{kvHead, s, rr});
          next.push_back(math::FmaOp::create(k.b, k.loc, l, weight, carried[vectors]));
          scf::YieldOp::create(k.b, k.loc, next);
        });
    // The combined row is one with running max `largest` and sum `total`.
    Value inverse = k.broadcast(rowNormalization(
        k, a, queryHeadOfRow(k, a, kvHead, rr), largest, sumLoop.getResult(vectors)));
    RowCoordinates row = rowCoordinates(k, a, kvHead, zero, rr);
    for (int64_t c = 0; c < vectors; ++c)
      k.store(arith::MulFOp::create(k.b, k.loc, sumLoop.getResult(c), inverse), a.output,
              ValueRange{row.position, k.add(row.column, k.index(c * w))});
  }
}

/// Tiling of the kernels.
struct AttentionTiling {
  int64_t width, blockRows, splitKeys, decodeTasks;
  bool fastExp, prefetch;
};

LogicalResult lowerAttention(RewriterBase &rewriter, FlashAttentionOp op,
                             const AttentionTiling &tiling) {
  int64_t width = tiling.width, blockRows = tiling.blockRows;
  if (!isa<MemRefType>(op.getInit().getType()))
    return op.emitOpError("must be bufferized before attn-lower-attention");
  Attention a;
  a.query = op.getQuery();
  a.key = op.getKey();
  a.value = op.getValue();
  a.output = op.getInit();
  a.heads = static_cast<int64_t>(op.getHeads());
  a.kvHeads = static_cast<int64_t>(op.getKvHeads());
  a.group = a.heads / a.kvHeads;
  a.headDim = op.getHeadDim();
  a.scale = op.getScale().convertToFloat();
  a.causal = op.getCausal();
  a.window = static_cast<int64_t>(op.getWindow().value_or(0));
  if (std::optional<ArrayRef<float>> alibi = op.getAlibi())
    a.alibi = *alibi;
  if (std::optional<APFloat> softcap = op.getSoftcap())
    a.softcap = softcap->convertToFloat();
  a.sinks = op.getSinks();
  a.prefetch = tiling.prefetch;
  // Rows are whole vectors of head_dim: narrow the vectors for an odd
  // head_dim (every real model's is a multiple of 16).
  while (a.headDim % width != 0)
    width /= 2;

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  KernelBuilder k(rewriter, loc, width, tiling.fastExp);
  Value seqQ = memref::DimOp::create(rewriter, loc, a.query, 0);
  Value kvLen = memref::DimOp::create(rewriter, loc, a.key, 0);
  int64_t staticSeqQ = cast<MemRefType>(a.query.getType()).getDimSize(0);
  Value zero = k.index(0), one = k.index(1);

  // Few rows (decode): tasks of (group of KV heads, split of the keys)
  // (flash-decoding), about decode-tasks of them: a short cache is split
  // by head, a long one by keys, whose tasks then take every head, so that
  // each reads whole KV rows.
  if (!ShapedType::isDynamic(staticSeqQ) && staticSeqQ * a.group < width) {
    int64_t rows = staticSeqQ * a.group;
    int64_t maxSplits = tiling.decodeTasks;
    // Keys before the first row's window are never visited.
    Value keysBegin = zero;
    if (a.window)
      keysBegin = k.maxIndex(
          zero, arith::SubIOp::create(rewriter, loc, kvLen,
                                      k.index(staticSeqQ + a.window - 1)));
    // splits = clamp(ceil(keys / split-keys), 1, decode-tasks), each a whole
    // number of key blocks; groups = clamp(ceil(decode-tasks / splits), 1,
    // kv_heads) of ceil(kv_heads / groups) heads (the last may have fewer).
    int64_t keyBlock = 2 * width;
    Value keys = arith::SubIOp::create(rewriter, loc, kvLen, keysBegin);
    Value wanted = arith::CeilDivUIOp::create(rewriter, loc, keys,
                                              k.index(tiling.splitKeys));
    Value splits = k.maxIndex(k.minIndex(wanted, k.index(maxSplits)), one);
    Value groups = k.maxIndex(
        k.minIndex(arith::CeilDivUIOp::create(rewriter, loc, k.index(tiling.decodeTasks),
                                              splits),
                   k.index(a.kvHeads)),
        one);
    Value headsPerGroup = arith::CeilDivUIOp::create(rewriter, loc, k.index(a.kvHeads), groups);
    groups = arith::CeilDivUIOp::create(rewriter, loc, k.index(a.kvHeads), headsPerGroup);
    Value perSplit = arith::CeilDivUIOp::create(rewriter, loc, keys, splits);
    Value chunk = k.mul(arith::CeilDivUIOp::create(rewriter, loc, perSplit,
                                                   k.index(keyBlock)),
                        k.index(keyBlock));
    Type f32 = rewriter.getF32Type();
    PartialSink sink;
    sink.outputs = memref::AllocOp::create(
        rewriter, loc, MemRefType::get({a.kvHeads, maxSplits, rows, a.headDim}, f32));
    sink.maxima = memref::AllocOp::create(
        rewriter, loc, MemRefType::get({a.kvHeads, maxSplits, rows}, f32));
    sink.sums = memref::AllocOp::create(
        rewriter, loc, MemRefType::get({a.kvHeads, maxSplits, rows}, f32));
    scf::ParallelOp::create(
        rewriter, loc, ValueRange{zero, zero}, ValueRange{groups, splits},
        ValueRange{one, one}, [&](OpBuilder &b, Location l, ValueRange ivs) {
          KernelBuilder inner(b, l, width, tiling.fastExp);
          Value headBegin = inner.mul(ivs[0], headsPerGroup);
          Value headCount = inner.minIndex(
              headsPerGroup, arith::SubIOp::create(b, l, inner.index(a.kvHeads), headBegin));
          Value begin =
              inner.minIndex(inner.add(keysBegin, inner.mul(ivs[1], chunk)), kvLen);
          Value end = inner.minIndex(inner.add(begin, chunk), kvLen);
          PartialSink split = sink;
          split.split = ivs[1];
          emitFewRowBlock(inner, a, headBegin, headCount, a.kvHeads, staticSeqQ, kvLen,
                          begin, end, split);
        });
    scf::ParallelOp::create(
        rewriter, loc, ValueRange{zero}, ValueRange{k.index(a.kvHeads)}, ValueRange{one},
        [&](OpBuilder &b, Location l, ValueRange ivs) {
          KernelBuilder inner(b, l, width, tiling.fastExp);
          combineSplits(inner, a, ivs[0], rows, splits, sink);
        });
    for (Value buffer : {sink.outputs, sink.maxima, sink.sums})
      memref::DeallocOp::create(rewriter, loc, buffer);
    rewriter.eraseOp(op);
    return success();
  }

  // Positions per block: about blockRows rows, a whole number of vectors.
  int64_t positions = std::max<int64_t>(1, blockRows / a.group);
  while (positions > 1 && (positions * a.group) % width != 0)
    --positions;
  Value blocks = arith::CeilDivUIOp::create(rewriter, loc, seqQ, k.index(positions));
  scf::ParallelOp::create(
      rewriter, loc, ValueRange{zero, zero}, ValueRange{k.index(a.kvHeads), blocks},
      ValueRange{one, one}, [&](OpBuilder &b, Location l, ValueRange ivs) {
        KernelBuilder inner(b, l, width, tiling.fastExp);
        emitMultiRowBlock(inner, a, ivs[0], ivs[1], positions, seqQ, kvLen);
      });
  rewriter.eraseOp(op);
  return success();
}

struct LowerAttentionPass
    : mlir::attn::impl::LowerAttentionPassBase<LowerAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (vectorWidth <= 0 || blockRows <= 0 || splitKeys <= 0 ||
        decodeTasks <= 0) {
      emitError(getOperation()->getLoc())
          << "attn-lower-attention: vector-width, block-rows, split-keys and "
             "decode-tasks must be positive, got "
          << vectorWidth.getValue() << ", " << blockRows.getValue() << ", "
          << splitKeys.getValue() << ", " << decodeTasks.getValue();
      return signalPassFailure();
    }
    AttentionTiling tiling{vectorWidth, blockRows, splitKeys, decodeTasks,
                           fastExp, prefetch};
    SmallVector<FlashAttentionOp> ops;
    getOperation()->walk([&](FlashAttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (FlashAttentionOp op : ops)
      if (failed(lowerAttention(rewriter, op, tiling)))
        return signalPassFailure();
  }
};

} // namespace
