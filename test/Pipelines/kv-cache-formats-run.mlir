// bf16 and f16 caches through the whole pipeline, run in mlir-runner:
// kv_cache_append rounds each f32 row to nearest, ties to even (arith.truncf
// as LLVM lowers it on this CPU), and kv_cache_read plus arith.extf gives
// the stored values back. Row 0 holds ties for bf16 (1 + 2^-8 and
// 1 + 3 * 2^-8, halfway between neighbours 2^-7 apart; exact in f16) and
// for f16 (1 + 2^-11 and 1 + 3 * 2^-11); row 1 values that are not ties
// and one beyond f16's range (70000: infinity in f16, 70144 in bf16).
// REQUIRES: native-cpu
// RUN: attn-opt %s --attn-to-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s

// CHECK-LABEL: bf16
// CHECK-NEXT: 1
// CHECK-NEXT: 1.01562
// CHECK-NEXT: 1
// CHECK-NEXT: 1
// CHECK-NEXT: 0.100098
// CHECK-NEXT: -3.01562
// CHECK-NEXT: 70144
// CHECK-NEXT: 1.5
// CHECK-LABEL: f16
// CHECK-NEXT: 1.00391
// CHECK-NEXT: 1.01172
// CHECK-NEXT: 1
// CHECK-NEXT: 1.00195
// CHECK-NEXT: 0.0999756
// CHECK-NEXT: -3.01562
// CHECK-NEXT: inf
// CHECK-NEXT: 1.5

func.func private @round_trip_bf16(%rows: tensor<2x4xf32>) -> tensor<?x4xbf16> {
  %cache = tensor.empty() : tensor<8x4xbf16>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %0 = attn.kv_cache_append %rows into %cache[%c0] : tensor<2x4xf32> into tensor<8x4xbf16>
  %all = attn.kv_cache_read %0[%c2] : tensor<8x4xbf16> -> tensor<?x4xbf16>
  return %all : tensor<?x4xbf16>
}

func.func private @round_trip_f16(%rows: tensor<2x4xf32>) -> tensor<?x4xf16> {
  %cache = tensor.empty() : tensor<8x4xf16>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %0 = attn.kv_cache_append %rows into %cache[%c0] : tensor<2x4xf32> into tensor<8x4xf16>
  %all = attn.kv_cache_read %0[%c2] : tensor<8x4xf16> -> tensor<?x4xf16>
  return %all : tensor<?x4xf16>
}

func.func @main() {
  %rows = arith.constant dense<[[1.00390625, 1.01171875, 1.00048828125, 1.00146484375],
                                [0.1, -3.0151, 70000.0, 1.5]]> : tensor<2x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = call @round_trip_bf16(%rows) : (tensor<2x4xf32>) -> tensor<?x4xbf16>
  %bpad = arith.constant 0.0 : bf16
  vector.print str "bf16\n"
  %b0 = vector.transfer_read %b[%c0, %c0], %bpad : tensor<?x4xbf16>, vector<4xbf16>
  %b0w = arith.extf %b0 : vector<4xbf16> to vector<4xf32>
  %b0w_0 = vector.extract %b0w[0] : f32 from vector<4xf32>
  vector.print %b0w_0 : f32
  %b0w_1 = vector.extract %b0w[1] : f32 from vector<4xf32>
  vector.print %b0w_1 : f32
  %b0w_2 = vector.extract %b0w[2] : f32 from vector<4xf32>
  vector.print %b0w_2 : f32
  %b0w_3 = vector.extract %b0w[3] : f32 from vector<4xf32>
  vector.print %b0w_3 : f32
  %b1 = vector.transfer_read %b[%c1, %c0], %bpad : tensor<?x4xbf16>, vector<4xbf16>
  %b1w = arith.extf %b1 : vector<4xbf16> to vector<4xf32>
  %b1w_0 = vector.extract %b1w[0] : f32 from vector<4xf32>
  vector.print %b1w_0 : f32
  %b1w_1 = vector.extract %b1w[1] : f32 from vector<4xf32>
  vector.print %b1w_1 : f32
  %b1w_2 = vector.extract %b1w[2] : f32 from vector<4xf32>
  vector.print %b1w_2 : f32
  %b1w_3 = vector.extract %b1w[3] : f32 from vector<4xf32>
  vector.print %b1w_3 : f32
  %h = call @round_trip_f16(%rows) : (tensor<2x4xf32>) -> tensor<?x4xf16>
  %hpad = arith.constant 0.0 : f16
  vector.print str "f16\n"
  %h0 = vector.transfer_read %h[%c0, %c0], %hpad : tensor<?x4xf16>, vector<4xf16>
  %h0w = arith.extf %h0 : vector<4xf16> to vector<4xf32>
  %h0w_0 = vector.extract %h0w[0] : f32 from vector<4xf32>
  vector.print %h0w_0 : f32
  %h0w_1 = vector.extract %h0w[1] : f32 from vector<4xf32>
  vector.print %h0w_1 : f32
  %h0w_2 = vector.extract %h0w[2] : f32 from vector<4xf32>
  vector.print %h0w_2 : f32
  %h0w_3 = vector.extract %h0w[3] : f32 from vector<4xf32>
  vector.print %h0w_3 : f32
  %h1 = vector.transfer_read %h[%c1, %c0], %hpad : tensor<?x4xf16>, vector<4xf16>
  %h1w = arith.extf %h1 : vector<4xf16> to vector<4xf32>
  %h1w_0 = vector.extract %h1w[0] : f32 from vector<4xf32>
  vector.print %h1w_0 : f32
  %h1w_1 = vector.extract %h1w[1] : f32 from vector<4xf32>
  vector.print %h1w_1 : f32
  %h1w_2 = vector.extract %h1w[2] : f32 from vector<4xf32>
  vector.print %h1w_2 : f32
  %h1w_3 = vector.extract %h1w[3] : f32 from vector<4xf32>
  vector.print %h1w_3 : f32
  return
}
