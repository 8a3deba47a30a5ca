// The qk-norm (Qwen3, Gemma 3) through the whole pipeline in mlir-runner,
// against numpy (f32 arithmetic, f64 angles): attn.rms_norm head_dim(16)
// alone, and folded into attn.rope as its input norm (rotate_half;
// interleaved with Gemma's gain offset; rotary_dims 8 of 16, where the
// pass-through features are normalized too), over 3 rows of 2 heads at
// positions 5..7. A norm over the whole row instead of each head, gains
// applied to the wrong pair member, or the pass-through part left
// unnormalized are off by far more than the 1e-6 checked. With
// fuse-norms=0 the norm followed by a rope stays two ops: the same values.
// REQUIRES: native-cpu
// RUN: attn-opt %s --attn-to-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// RUN: attn-opt %s --attn-to-llvm="threads=0 fuse-norms=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// The pipeline folds the stand-alone norm into the rope it feeds: the
// per-head sums of squares (a reduction), then the rotation reading 1/rms
// and the gains (8 operands); no [rows, heads, head_dim] normalized tensor
// is written, as it is unfused.
// RUN: attn-opt %s --attn-pipeline-linalg | FileCheck %s --check-prefix=FUSED
// RUN: attn-opt %s --attn-pipeline-linalg="fuse-norms=0" | FileCheck %s --check-prefix=UNFUSED
// FUSED-LABEL: func.func private @norm_then_rope(
// FUSED: iterator_types = ["parallel", "parallel", "reduction"]
// FUSED-NOT: iterator_types = ["parallel", "parallel", "parallel"]
// FUSED: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// FUSED: return
// UNFUSED-LABEL: func.func private @norm_then_rope(
// UNFUSED: iterator_types = ["parallel", "parallel", "reduction"]
// UNFUSED: iterator_types = ["parallel", "parallel", "parallel"]
// UNFUSED: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]

// CHECK: norm 1
// CHECK-NEXT: half 1
// CHECK-NEXT: norm_then_rope 1
// CHECK-NEXT: interleaved 1
// CHECK-NEXT: partial 1

func.func private @norm(%x: tensor<?x32xf32>, %g: tensor<16xf32>) -> tensor<?x32xf32> {
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) head_dim(16) : tensor<?x32xf32>, tensor<16xf32>
  return %0 : tensor<?x32xf32>
}

func.func private @half(%x: tensor<?x32xf32>, %g: tensor<16xf32>, %pos: index) -> tensor<?x32xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(16) theta(1.0e+04) rms_norm(%g : tensor<16xf32>) epsilon(1.0e-06) rotate_half : tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

func.func private @norm_then_rope(%x: tensor<?x32xf32>, %g: tensor<16xf32>, %pos: index) -> tensor<?x32xf32> {
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) head_dim(16) : tensor<?x32xf32>, tensor<16xf32>
  %1 = attn.rope %0 offset(%pos) head_dim(16) theta(1.0e+04) rotate_half : tensor<?x32xf32>
  return %1 : tensor<?x32xf32>
}

func.func private @interleaved(%x: tensor<?x32xf32>, %g: tensor<16xf32>, %pos: index) -> tensor<?x32xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(16) theta(1.0e+04) rms_norm(%g : tensor<16xf32>) epsilon(1.0e-06) gain_offset(1.0) interleaved : tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

func.func private @partial(%x: tensor<?x32xf32>, %g: tensor<16xf32>, %pos: index) -> tensor<?x32xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(16) rotary_dims(8) theta(1.0e+04) rms_norm(%g : tensor<16xf32>) epsilon(1.0e-06) rotate_half : tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// Whether every element of %t is within 1e-6 of %want's.
func.func private @within(%t: tensor<?x32xf32>, %want: tensor<3x32xf32>) -> i1 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %worst = scf.for %r = %c0 to %c3 step %c1 iter_args(%w0 = %zero) -> f32 {
    %w1 = scf.for %c = %c0 to %c32 step %c1 iter_args(%w = %w0) -> f32 {
      %a = tensor.extract %t[%r, %c] : tensor<?x32xf32>
      %b = tensor.extract %want[%r, %c] : tensor<3x32xf32>
      %d = arith.subf %a, %b : f32
      %e = math.absf %d : f32
      %m = arith.maximumf %w, %e : f32
      scf.yield %m : f32
    }
    scf.yield %w1 : f32
  }
  %tol = arith.constant 1.0e-06 : f32
  %ok = arith.cmpf olt, %worst, %tol : f32
  return %ok : i1
}

func.func @main() {
  %x = arith.constant dense<[[0.19966683, 1.4347122, 1.99499, 1.6169928, 0.47849867, -0.8850409, -1.8323319, -1.9178486, -1.101371, 0.2330984, 1.4579381, 1.9970866, 1.5969743, 0.44577983, -0.9150718, -1.8455509, -1.9080385, -1.0731459, 0.26646408, 1.4807518, 1.9986187, 1.5765041, 0.41293496, -0.94484395, -1.858248, -1.897689, -1.0446172, 0.2997544, 1.5031469, 1.9995857, 1.5555884, 0.37997335], [-0.974349, -1.8704199, -1.8868029, -1.0157932, 0.33296, 1.5251169, 1.9999875, 1.5342327, 0.3469043, -1.0035785, -1.8820628, -1.8753835, -0.986682, 0.36607146, 1.5466558, 1.9998237, 1.5124433, 0.31373718, -1.0325245, -1.8931737, -1.8634337, -0.95729184, 0.3990794, 1.5677574, 1.9990946, 1.4902263, 0.28048137, -1.0611783, -1.9037493, -1.8509573, -0.927631, 0.43197453], [1.5884157, 1.9978002, 1.467588, 0.24714625, -1.0895323, -1.9137866, -1.8379574, -0.89770794, 0.46474752, 1.6086249, 1.9959409, 1.4445348, 0.21374124, -1.1175781, -1.923283, -1.8244379, -0.86753106, 0.4973891, 1.6283795, 1.9935175, 1.4210731, 0.18027583, -1.145308, -1.9322356, -1.8104025, -0.8371089, 0.52989006, 1.6476735, 1.9905304, 1.3972096, 0.14675942, -1.172714]]> : tensor<3x32xf32>
  %g = arith.constant dense<[0.5, 0.57, 0.64, 0.71, 0.78, 0.85, 0.92, 0.99, 1.06, 1.13, 1.2, 1.27, 1.34, 1.41, 1.48, 1.55]> : tensor<16xf32>
  %want_norm = arith.constant dense<[[0.07159033, 0.5864325, 0.91558594, 0.82327485, 0.26764166, -0.5394618, -1.2088443, -1.3615322, -0.8371782, 0.18888442, 1.2545811, 1.8187752, 1.5345503, 0.45073152, -0.97117007, -2.0513327, -0.67824465, -0.4348734, 0.12124055, 0.7474288, 1.1082909, 0.9526717, 0.27008393, -0.66500443, -1.400357, -1.5245185, -0.89118457, 0.27064407, 1.4319751, 2.0044184, 1.6367624, 0.41871068], [-0.33660293, -0.7366264, -0.8343338, -0.49830702, 0.1794403, 0.89568526, 1.2713012, 1.0494453, 0.25406736, -0.7835436, -1.5604459, -1.6456108, -0.9135144, 0.35663036, 1.5815711, 2.1416905, 0.5563482, 0.13156441, -0.48615846, -0.98888624, -1.0693161, -0.5986333, 0.2701125, 1.1418568, 1.5589663, 1.238877, 0.24761836, -0.991493, -1.8767748, -1.9200523, -1.0100306, 0.49259204], [0.5372959, 0.77038217, 0.6354237, 0.1187112, -0.57492876, -1.1005044, -1.1439383, -0.60124236, 0.3332746, 1.2297379, 1.620348, 1.2411122, 0.19376373, -1.066047, -1.9256806, -1.9131106, -0.32214803, 0.21055791, 0.7739912, 1.0511843, 0.8232115, 0.11380383, -0.78254724, -1.4206783, -1.4252183, -0.70252347, 0.47224513, 1.5540869, 1.9809525, 1.4631239, 0.16131255, -1.3499705]]> : tensor<3x32xf32>
  %want_half = arith.constant dense<[[-0.782483, -0.19493939, 0.20202404, 0.5266285, 0.19061165, -0.54652077, -1.2039733, -1.3582871, -0.3061255, 0.5844477, 1.5399538, 1.9257172, 1.5460091, 0.4421459, -0.9772021, -2.0534828, -1.5352287, 1.5289346, 0.5336552, 0.69549084, 1.0353369, 0.9208613, 0.2618968, -0.6656656, 0.2531569, -0.4190831, -0.72396225, 0.3849551, 1.485577, 2.0192301, 1.6380923, 0.4176587], [-0.25220576, 0.978439, 0.19248867, -0.17900169, 0.23389539, 0.8887578, 1.2617888, 1.0453798, 0.338, -0.4463363, -1.758992, -1.7100594, -0.9011106, 0.37355956, 1.5891703, 2.143678, 0.9697883, -1.2156056, -0.54105973, -0.78414375, -0.95485306, -0.5620973, 0.2761678, 1.1409202, 1.3414207, -0.2728164, -0.070137486, -1.1602038, -1.9375181, -1.9310642, -1.0083917, 0.49475765], [0.18611163, -1.4461048, -0.5578579, -0.15667912, -0.58707315, -1.0766387, -1.1304306, -0.597006, 0.6042527, -0.12052035, 1.6486617, 1.2368927, 0.15307705, -1.0901445, -1.933641, -1.9144368, 0.6934812, 0.4360987, 0.2877525, 0.68432593, 0.68264204, 0.08139097, -0.7836572, -1.4176865, -1.2861222, 0.58965397, 0.8598118, 1.746961, 2.033679, 1.4652843, 0.15583082, -1.353112]]> : tensor<3x32xf32>
  %want_inter = arith.constant dense<[[1.6098359, 0.25223953, -2.0069761, 2.3255568, 1.0989072, -0.7375698, -2.0604079, -3.0999086, -1.6427301, 0.2742793, 2.248379, 3.2868412, 2.6758518, 0.78378826, -1.6220281, -3.377342, -1.7257855, 1.6113827, -1.8032625, 0.2920446, 1.2254907, 3.032186, 0.7670978, -1.2313012, -2.5744247, -3.0060744, -1.6412827, 0.457857, 2.483452, 3.4384518, 2.7415905, 0.69318235], [-1.5365093, -1.6659844, 1.8225745, -1.6399809, -0.7627641, 1.8401526, 2.207686, 2.572019, 0.58142865, -1.44468, -2.8044972, -2.9951148, -1.5988702, 0.5999773, 2.6435103, 3.5284488, 1.7038213, -0.11841121, 2.6554496, -0.4159035, -1.2783351, -2.453196, 0.12071231, 2.360373, 2.8842077, 2.512699, 0.48750833, -1.7632642, -3.2576036, -3.3013964, -1.6940182, 0.8071807], [-0.17887366, 2.6587162, -1.2048967, 1.1319201, 0.5395541, -2.6771863, -2.0637517, -1.7032262, 0.48397085, 2.357626, 2.9208088, 2.283575, 0.35110992, -1.8196954, -3.2198412, -3.1545107, -1.1096288, -0.19770935, -3.2153437, 0.06990731, 1.2772743, 1.3996787, -0.96630543, -3.1445937, -2.670361, -1.514708, 0.8040869, 2.7962604, 3.4416854, 2.5249538, 0.27522308, -2.2203152]]> : tensor<3x32xf32>
  %want_partial = arith.constant dense<[[0.27695557, 0.7732747, 0.97485876, 0.83007216, 0.00727012, -0.19227153, -1.1615733, -1.3573987, -0.8371782, 0.18888442, 1.2545811, 1.8187752, 1.5345503, 0.45073152, -0.97117007, -2.0513327, 0.8703747, -0.83837247, 0.10759047, 0.7507444, 0.9647655, 0.62755865, 0.2758059, -0.66125894, -1.400357, -1.5245185, -0.89118457, 0.27064407, 1.4319751, 2.0044184, 1.6367624, 0.41871068], [-0.2730577, -1.1137059, -0.9090647, -0.5045947, 0.26634532, 0.32331038, 1.2189835, 1.0464367, 0.25406736, -0.7835436, -1.5604459, -1.6456108, -0.9135144, 0.35663036, 1.5815711, 2.1416905, 0.2354055, 0.4465986, -0.5014807, -0.9957195, -1.1821778, -0.41978654, 0.24047446, 1.135903, 1.5589663, 1.238877, 0.24761836, -0.991493, -1.8767748, -1.9200523, -1.0100306, 0.49259204], [0.78278905, 1.2981852, 0.71387786, 0.12291696, -0.08044389, -0.34541842, -1.0966935, -0.6003967, 0.3332746, 1.2297379, 1.620348, 1.2411122, 0.19376373, -1.066047, -1.9256806, -1.9131106, -0.783707, 0.087729126, 0.8268293, 1.0611032, 0.4089741, 0.2226871, -0.7264956, -1.4132853, -1.4252183, -0.70252347, 0.47224513, 1.5540869, 1.9809525, 1.4631239, 0.16131255, -1.3499705]]> : tensor<3x32xf32>
  %rows = tensor.cast %x : tensor<3x32xf32> to tensor<?x32xf32>
  %c5 = arith.constant 5 : index
  %n = call @norm(%rows, %g) : (tensor<?x32xf32>, tensor<16xf32>) -> tensor<?x32xf32>
  %n_ok = call @within(%n, %want_norm) : (tensor<?x32xf32>, tensor<3x32xf32>) -> i1
  vector.print str "norm "
  vector.print %n_ok : i1
  %h = call @half(%rows, %g, %c5) : (tensor<?x32xf32>, tensor<16xf32>, index) -> tensor<?x32xf32>
  %h_ok = call @within(%h, %want_half) : (tensor<?x32xf32>, tensor<3x32xf32>) -> i1
  vector.print str "half "
  vector.print %h_ok : i1
  %u = call @norm_then_rope(%rows, %g, %c5) : (tensor<?x32xf32>, tensor<16xf32>, index) -> tensor<?x32xf32>
  %u_ok = call @within(%u, %want_half) : (tensor<?x32xf32>, tensor<3x32xf32>) -> i1
  vector.print str "norm_then_rope "
  vector.print %u_ok : i1
  %i = call @interleaved(%rows, %g, %c5) : (tensor<?x32xf32>, tensor<16xf32>, index) -> tensor<?x32xf32>
  %i_ok = call @within(%i, %want_inter) : (tensor<?x32xf32>, tensor<3x32xf32>) -> i1
  vector.print str "interleaved "
  vector.print %i_ok : i1
  %p = call @partial(%rows, %g, %c5) : (tensor<?x32xf32>, tensor<16xf32>, index) -> tensor<?x32xf32>
  %p_ok = call @within(%p, %want_partial) : (tensor<?x32xf32>, tensor<3x32xf32>) -> i1
  vector.print str "partial "
  vector.print %p_ok : i1
  return
}
