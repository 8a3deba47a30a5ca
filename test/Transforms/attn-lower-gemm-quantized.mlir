// RUN: attn-opt %s -split-input-file --attn-lower-gemm --canonicalize --cse | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-lower-gemm="vector-width=8 int8-dot=vpmaddubsw" --canonicalize --cse | FileCheck %s --check-prefix=AVX2
// RUN: attn-opt %s -split-input-file --attn-lower-gemm="int8-dot=vpmaddubsw" --canonicalize --cse | FileCheck %s --check-prefix=BW
// attn-lower-gemm on q8_0 and q4_0 weights (PackedWeight.h). Numbers: the
// PackedGemm e2e tests (q8_0 / q4_0 against the scalar reference of the
// format) and ModelE2EWeightFormats.

// A q8_0 weight [2 blocks, 64/32 groups, NR 32, 34 bytes]: the input rows are
// quantized to int8 per block of 32 first (amax / 127, rounded to nearest
// even; the block's sum times the weights' offset 128 kept), then every
// block of 32 inputs is eight VNNI dot products per weight vector (64 bytes:
// 16 features x 4 inputs) whose int32 sums, less the offset term, join the
// f32 accumulator times the weight's f16 scales and the input's scale.
// CHECK-LABEL: func.func @q8_0_weight
// CHECK: %[[SLABS:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : memref<2x2x32x34xi8> into memref<2x2x1088xi8>
// CHECK: %[[QUADS:.*]] = memref.alloc(%{{.*}}) : memref<?x16xi32>
// CHECK: %[[SCALES:.*]] = memref.alloc(%{{.*}}) : memref<?x2xf32>
// CHECK: %[[SUMS:.*]] = memref.alloc(%{{.*}}) : memref<?x2xi32>
// CHECK: vector.reduction <maxnumf>, %{{.*}} : vector<32xf32> into f32
// CHECK: math.roundeven %{{.*}} : vector<32xf32>
// CHECK: vector.store %{{.*}}, %[[QUADS]]
// CHECK: %[[SUM:.*]] = vector.reduction <add>, %{{.*}} : vector<32xi32> into i32
// CHECK: arith.muli %[[SUM]], %c128_i32 : i32
// CHECK: scf.parallel
// CHECK: vector.load %[[SLABS]][%{{.*}}, %{{.*}}, %c0] : memref<2x2x1088xi8>, vector<64xi8>
// CHECK: %[[WORD:.*]] = memref.load %[[QUADS]]
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[WORD]] : i32 to vector<16xi32>
// CHECK: %[[BYTES:.*]] = vector.bitcast %[[SPLAT]] : vector<16xi32> to vector<64xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %{{.*}}, %[[BYTES]]) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// The scales of features 0..15 follow the 1024 weight bytes.
// CHECK: %[[D:.*]] = vector.load %[[SLABS]][%{{.*}}, %{{.*}}, %c1024] : memref<2x2x1088xi8>, vector<32xi8>
// CHECK: vector.bitcast %[[D]] : vector<32xi8> to vector<16xf16>
// CHECK: arith.subi
// CHECK: arith.sitofp %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: vector.fma
// The one-row tile prefetches 2 x prefetch-bytes (8192) ahead: 8192 / 1088
// = 7 slabs, each of its 17 cache lines.
// CHECK: scf.for %[[G:.*]] = %c0 to %c2 step %c1 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (vector<16xf32>, vector<16xf32>) {
// CHECK-NEXT: arith.addi %[[G]], %c7 : index
// CHECK-COUNT-17: memref.prefetch %[[SLABS]]
// CHECK: memref.dealloc %[[QUADS]]
// Without VNNI (int8-dot=vpmaddubsw; AVX2's 8 lanes here): the stored
// byte's top bit flipped is the signed weight, which takes the sign of the
// input (vpsignb) to meet the input's magnitude in vpmaddubsw, a pair of
// products in int16 (at most 2 * 127 * 127), then vpmaddwd by ones sums the
// pairs to int32. No offset term: the sums of the inputs are not kept.
// AVX2-LABEL: func.func @q8_0_weight
// AVX2: %[[QUADS:.*]] = memref.alloc(%{{.*}}) : memref<?x16xi32>
// AVX2-NEXT: memref.alloc(%{{.*}}) : memref<?x2xf32>
// AVX2-NOT: memref.alloc
// AVX2: %[[W:.*]] = arith.xori %{{.*}}, %{{.*}} : vector<32xi8>
// AVX2: %[[X:.*]] = vector.bitcast %{{.*}} : vector<8xi32> to vector<32xi8>
// AVX2-NEXT: %[[MAG:.*]] = math.absi %[[X]] : vector<32xi8>
// AVX2-NEXT: %[[SW:.*]] = llvm.call_intrinsic "llvm.x86.avx2.psign.b"(%[[W]], %[[X]]) : (vector<32xi8>, vector<32xi8>) -> vector<32xi8>
// AVX2-NEXT: %[[PAIRS:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%[[MAG]], %[[SW]]) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
// AVX2-NEXT: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%[[PAIRS]], %{{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// AVX2-NOT: arith.subi %{{.*}} : vector<8xi32>
// AVX2: arith.sitofp %{{.*}} : vector<8xi32> to vector<8xf32>
// AVX-512BW has no vpsignb: a compare and a select negate the weight.
// BW-LABEL: func.func @q8_0_weight
// BW: arith.cmpi slt, %{{.*}}, %{{.*}} : vector<64xi8>
// BW: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<64xi1>, vector<64xi8>
// BW: llvm.call_intrinsic "llvm.x86.avx512.pmaddubs.w.512"(%{{.*}}, %{{.*}}) : (vector<64xi8>, vector<64xi8>) -> vector<32xi16>
// BW: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"(%{{.*}}, %{{.*}}) : (vector<32xi16>, vector<32xi16>) -> vector<16xi32>
// BW-NOT: vpdpbusd
func.func @q8_0_weight(%x: memref<?x64xf32>, %w: memref<2x2x32x34xi8>, %out: memref<?x64xf32>) {
  attn.gemm none ins(%x, %w : memref<?x64xf32>, memref<2x2x32x34xi8>) outs(%out : memref<?x64xf32>)
  return
}

// -----

// q4_0 [.., 18 bytes]: one 64-byte load holds quad q in its low nibbles and
// quad q + 4 in its high ones; the offset is 8; the scales follow the 512
// weight bytes.
// CHECK-LABEL: func.func @q4_0_weight
// CHECK: %[[SLABS:.*]] = memref.collapse_shape %{{.*}} : memref<2x2x32x18xi8> into memref<2x2x576xi8>
// CHECK: arith.muli %{{.*}}, %c8_i32 : i32
// CHECK: %[[RAW:.*]] = vector.load %[[SLABS]][%{{.*}}, %{{.*}}, %c0] : memref<2x2x576xi8>, vector<64xi8>
// CHECK: arith.andi %[[RAW]], %{{.*}} : vector<64xi8>
// CHECK: arith.shrui %[[RAW]], %{{.*}} : vector<64xi8>
// CHECK: vector.load %[[SLABS]][%{{.*}}, %{{.*}}, %c512] : memref<2x2x576xi8>, vector<32xi8>
// Without VNNI, q4_0's nibbles (0..15) times the signed inputs go straight
// into vpmaddubsw, and a block's 8 quads add up in int16 (at most
// 16 * 15 * 127 per lane) before one vpmaddwd; the offset 8 is subtracted.
// AVX2-LABEL: func.func @q4_0_weight
// AVX2: memref.alloc(%{{.*}}) : memref<?x2xi32>
// AVX2: %[[P0:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%{{.*}}, %{{.*}}) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
// AVX2-NOT: pmadd.wd
// AVX2: arith.addi %[[P0]], %{{.*}} : vector<16xi16>
// AVX2-NOT: pmadd.wd
// AVX2: arith.shrui
// AVX2-NOT: pmadd.wd
// AVX2: arith.addi %{{.*}}, %{{.*}} : vector<16xi16>
// AVX2: %[[WIDE:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%{{.*}}, %{{.*}}) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// AVX2: arith.subi %{{.*}}, %{{.*}} : vector<8xi32>
func.func @q4_0_weight(%x: memref<?x64xf32>, %w: memref<2x2x32x18xi8>, %out: memref<?x64xf32>) {
  attn.gemm none ins(%x, %w : memref<?x64xf32>, memref<2x2x32x18xi8>) outs(%out : memref<?x64xf32>)
  return
}

// -----

// An RMS norm fused into a quantized gemm is applied as the rows are
// quantized: each row's sum of squares, 1 / sqrt(mean + eps), then every
// block of 32 is scaled and multiplied by its gains before its amax is
// taken. No normalized f32 copy of the rows is made.
// CHECK-LABEL: func.func @q8_0_rms_norm
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x64xf32>, %{{[^:]*}}: memref<2x2x32x34xi8>, %[[G:[^:]*]]: memref<64xf32>
// CHECK-NOT: memref.alloc(%{{.*}}) : memref<?x64xf32>
// CHECK: scf.parallel (%[[ROW:.*]]) =
// CHECK: %[[V:.*]] = vector.load %[[X]][%[[ROW]], %{{.*}}] : memref<?x64xf32>, vector<16xf32>
// CHECK: arith.mulf %[[V]], %[[V]] : vector<16xf32>
// CHECK: %[[SUM:.*]] = vector.reduction <add>, %{{.*}} : vector<16xf32> into f32
// CHECK: %[[MEAN:.*]] = arith.divf %[[SUM]], %{{.*}} : f32
// CHECK: %[[ROOT:.*]] = math.sqrt %{{.*}} : f32
// CHECK: %[[SCALE:.*]] = arith.divf %{{.*}}, %[[ROOT]] : f32
// CHECK: %[[XB:.*]] = vector.load %[[X]][%[[ROW]], %{{.*}}] : memref<?x64xf32>, vector<32xf32>
// CHECK: %[[S:.*]] = vector.broadcast %[[SCALE]] : f32 to vector<32xf32>
// CHECK: %[[N:.*]] = arith.mulf %[[XB]], %[[S]] : vector<32xf32>
// CHECK: %[[GAIN:.*]] = vector.load %[[G]][%{{.*}}] : memref<64xf32>, vector<32xf32>
// CHECK: %[[Y:.*]] = arith.mulf %[[N]], %[[GAIN]] : vector<32xf32>
// CHECK: math.absf %[[Y]] : vector<32xf32>
// CHECK: math.roundeven
// CHECK-NOT: memref.alloc(%{{.*}}) : memref<?x64xf32>
// CHECK: llvm.x86.avx512.vpdpbusd.512
func.func @q8_0_rms_norm(%x: memref<?x64xf32>, %w: memref<2x2x32x34xi8>, %g: memref<64xf32>, %out: memref<?x64xf32>) {
  attn.gemm none ins(%x, %w : memref<?x64xf32>, memref<2x2x32x34xi8>) rms_norm(%g : memref<64xf32>) epsilon(1.0e-05) outs(%out : memref<?x64xf32>)
  return
}
