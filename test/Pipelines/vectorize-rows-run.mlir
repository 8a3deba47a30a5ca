// The ops between the kernels, vectorized by attn-vectorize-rows, through
// the whole pipeline in mlir-runner, against numpy (f32 arithmetic, f64
// angles): RMSNorm (a row reduction, then a per-row scalar broadcast over
// the row) and RoPE in both pairings, over a dynamic number of rows as a
// prefill has them, and one row as decode has it. Each result is compared
// with numpy's to 1e-6 (last-bit differences: the vectorized sum adds in a
// tree); a wrong lane, row or sign is off by far more. A mixture of
// experts' router (4 experts of 32 features, top 2, renormalized: a
// contraction of an out_in weight, one dot product per expert) chooses
// numpy's experts with numpy's weights to 1e-6. The scalar loops of
// vectorize-rows=0 pass the same checks.
// REQUIRES: native-cpu
// RUN: attn-opt %s --attn-to-llvm="threads=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// RUN: attn-opt %s --attn-to-llvm="threads=0 vectorize-rows=0" | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_c_runner_utils | FileCheck %s
// The vectorized code has loops over the rows only, none over a row's elements.
// RUN: attn-opt %s --attn-pipeline-linalg --attn-pipeline-bufferize --attn-pipeline-loops="threads=0" | FileCheck %s --check-prefix=IR
// IR-LABEL: func.func private @norm(
// IR-NOT: scf.for {{.*}} to %c32
// IR: vector.reduction <add>, %{{.*}}, %{{.*}} fastmath<reassoc> : vector<32xf32> into f32
// IR-NOT: scf.for {{.*}} to %c32
// IR-LABEL: func.func private @norm_row(
// IR-NOT: scf.for
// IR: vector.reduction <add>
// IR-NOT: scf.for
// IR-LABEL: func.func private @rope_half(
// IR-NOT: scf.for {{.*}} to %c8
// IR: math.cos %{{.*}} : vector<8xf64>
// IR-NOT: scf.for {{.*}} to %c8
// IR: vector.store %{{.*}} : memref<2x2x8xf32, {{.*}}>, vector<8xf32>
// IR-NOT: scf.for {{.*}} to %c8
// IR-LABEL: func.func private @rope_interleaved(
// IR-LABEL: func.func private @router(
// IR-NOT: scf.for {{.*}} to %c32
// IR: scf.for {{.*}} to %c4 step %c1
// IR-NOT: scf.for {{.*}} to %c32
// IR: vector.reduction <add>, %{{.*}}, %{{.*}} fastmath<reassoc> : vector<32xf32> into f32
// IR-LABEL: func.func private @within

// CHECK: rms 1
// CHECK-NEXT: rope_half 1
// CHECK-NEXT: rope_interleaved 1
// CHECK-NEXT: decode_row 1
// CHECK-NEXT: router 1

func.func private @norm(%x: tensor<?x32xf32>, %g: tensor<32xf32>) -> tensor<?x32xf32> {
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) : tensor<?x32xf32>, tensor<32xf32>
  return %0 : tensor<?x32xf32>
}

func.func private @norm_row(%x: tensor<1x32xf32>, %g: tensor<32xf32>) -> tensor<1x32xf32> {
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) : tensor<1x32xf32>, tensor<32xf32>
  return %0 : tensor<1x32xf32>
}

func.func private @rope_half(%x: tensor<?x32xf32>, %pos: index) -> tensor<?x32xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(16) theta(1.0e+04) rotate_half : tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

func.func private @rope_interleaved(%x: tensor<?x32xf32>, %pos: index) -> tensor<?x32xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(16) theta(1.0e+04) interleaved : tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

func.func private @router(%x: tensor<?x32xf32>, %w: tensor<4x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
  %weights, %experts = attn.moe_router %x, %w top_k(2) softmax_top_k normalize
      : tensor<?x32xf32>, tensor<4x32xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %weights, %experts : tensor<?x2xf32>, tensor<?x2xi32>
}

// Whether the 3 rows chose %want_e's experts with %want_w's weights to 1e-6.
func.func private @routed(%w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %want_w: tensor<3x2xf32>,
                          %want_e: tensor<3x2xi32>) -> i1 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %true = arith.constant true
  %tol = arith.constant 1.0e-06 : f32
  %ok = scf.for %r = %c0 to %c3 step %c1 iter_args(%ok0 = %true) -> i1 {
    %ok1 = scf.for %j = %c0 to %c2 step %c1 iter_args(%acc = %ok0) -> i1 {
      %a = tensor.extract %w[%r, %j] : tensor<?x2xf32>
      %b = tensor.extract %want_w[%r, %j] : tensor<3x2xf32>
      %d = arith.subf %a, %b : f32
      %near = arith.cmpf olt, %d, %tol : f32
      %nd = arith.negf %d : f32
      %near2 = arith.cmpf olt, %nd, %tol : f32
      %ea = tensor.extract %e[%r, %j] : tensor<?x2xi32>
      %eb = tensor.extract %want_e[%r, %j] : tensor<3x2xi32>
      %same = arith.cmpi eq, %ea, %eb : i32
      %o1 = arith.andi %near, %near2 : i1
      %o2 = arith.andi %o1, %same : i1
      %o3 = arith.andi %acc, %o2 : i1
      scf.yield %o3 : i1
    }
    scf.yield %ok1 : i1
  }
  return %ok : i1
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
  %x = arith.constant dense<[[0.199666828, 0.905772567, 1.48928618, 1.87123203, 1.99991524, 1.85791945, 1.46446288, 0.872798145, 0.163004309, -0.568851411, -1.22371578, -1.71295595, -1.97035551, -1.96107674, -1.6863755, -1.18343115, -0.520314991, 0.213223383, 0.917902946, 1.49834871, 1.87599993, 1.99974346, 1.85283101, 1.45514655, 0.860514939, 0.149416581, -0.58190459, -1.23446774, -1.71995139, -1.97264779, -1.95835543, -1.67900896], [-1.17241645, -0.507142901, 0.226770043, 0.929990768, 1.50734162, 1.8806808, 1.9994787, 1.84765649, 1.44576275, 0.848191679, 0.135821924, -0.594930708, -1.24516225, -1.72686696, -1.97484827, -1.95554316, -1.67156446, -1.16134739, -0.493947327, 0.240306154, 0.942035317, 1.51626444, 1.88527429, 1.99912107, 1.84239626, 1.43631172, 0.835829079, 0.122220948, -0.60792923, -1.25579906, -1.7337023, -1.97695708], [-1.95264006, -1.66404235, -1.15022433, -0.480728775, 0.253831118, 0.954036176, 1.52511692, 1.88978016, 1.99867058, 1.83705032, 1.42679393, 0.823427677, 0.108614303, -0.620899498, -1.26637745, -1.74045718, -1.97897422, -1.94964635, -1.656443, -1.13904786, -0.467487901, 0.267344296, 0.965992689, 1.53389859, 1.89419842, 1.99812734, 1.83161926, 1.41720998, 0.810988009, 0.095002614, -0.633840919, -1.27689707]]> : tensor<3x32xf32>
  %g = arith.constant dense<[0.5, 0.529999971, 0.560000002, 0.589999974, 0.620000005, 0.649999976, 0.680000007, 0.709999979, 0.74000001, 0.769999981, 0.800000012, 0.829999983, 0.860000014, 0.889999986, 0.920000017, 0.949999988, 0.980000019, 1.00999999, 1.03999996, 1.07000005, 1.10000002, 1.13, 1.15999997, 1.19000006, 1.22000003, 1.25, 1.27999997, 1.30999994, 1.34000003, 1.37, 1.39999998, 1.42999995]> : tensor<32xf32>
  %want_rms = arith.constant dense<[[0.0693608448, 0.333528906, 0.579434872, 0.767040193, 0.861473143, 0.839032352, 0.691872001, 0.430537134, 0.0838048756, -0.304318279, -0.680156767, -0.987785697, -1.17728472, -1.21261537, -1.07790518, -0.781097174, -0.35426718, 0.149621725, 0.663236678, 1.11387169, 1.4337188, 1.56996942, 1.49324918, 1.20307362, 0.72938484, 0.129761934, -0.517487943, -1.12354255, -1.60125124, -1.8776238, -1.90483785, -1.66812086], [-0.423124522, -0.194009274, 0.0916621462, 0.396047175, 0.67455858, 0.882357717, 0.981390834, 0.94688201, 0.772227108, 0.47141242, 0.0784289092, -0.356418937, -0.77293092, -1.10934126, -1.31140804, -1.34093368, -1.18240285, -0.846641958, -0.370791912, 0.185594454, 0.747956216, 1.2367152, 1.57851541, 1.71712673, 1.62240458, 1.29591048, 0.772224784, 0.115566827, -0.587995648, -1.24181533, -1.75193846, -2.04056096], [-0.706563294, -0.638262212, -0.466154069, -0.205263153, 0.113892585, 0.448783696, 0.750535011, 0.971020758, 1.07036483, 1.02369523, 0.826057255, 0.494609445, 0.0675996393, -0.399917305, -0.843159795, -1.19659126, -1.40354109, -1.42506969, -1.24671936, -0.882032692, -0.372153372, 0.218629256, 0.810943663, 1.32099915, 1.67241561, 1.80755723, 1.69669592, 1.34358263, 0.786462724, 0.0941922218, -0.642195404, -1.32145023]]> : tensor<3x32xf32>
  %want_half = arith.constant dense<[[0.212946713, 0.559453249, 1.8936522, 2.11760521, 2.09589267, 1.88869333, 1.47287631, 0.874668241, -0.145227224, 0.911607385, -0.359909832, -1.39695203, -1.867939, -1.93145657, -1.67903209, -1.18204975, 0.677574992, -0.151613817, 1.08451557, 1.67403257, 1.95961714, 2.03068256, 1.86259949, 1.45779955, 0.743038237, 0.211666673, -0.0706031621, -0.983145177, -1.62404096, -1.94078386, -1.94906676, -1.67670608], [-0.721750915, -0.640673578, 0.110470571, 1.02550519, 1.5792942, 1.91310525, 2.01129174, 1.85136354, 1.71576977, -0.752436399, 0.240142673, -0.408857495, -1.15253532, -1.69087481, -1.962816, -1.952034, -1.09019256, -0.987843871, -0.879616916, 0.212942705, 0.976794004, 1.53981709, 1.89564252, 2.00286841, 2.23607516, -1.56073177, 0.410935909, 0.165349379, -0.55034709, -1.22680569, -1.72235954, -1.97316039], [-2.78519964, -0.472925603, -1.79890597, -0.649787486, 0.245612711, 0.967545569, 1.53394413, 1.89362812, 0.22394383, -2.43313217, 0.350277424, 0.697789013, 0.126101986, -0.599630594, -1.25567067, -1.73626971, -2.7364161, -0.430653453, -2.44687891, -1.42241204, -0.523065865, 0.265175998, 0.970405877, 1.53672147, 0.127880931, -2.75829124, 0.333789945, 1.13254499, 0.776304483, 0.100896776, -0.627063453, -1.27349854]]> : tensor<3x32xf32>
  %want_inter = arith.constant dense<[[0.92520529, 0.0654680729, -1.88653469, 1.46985364, 0.864356637, 2.58928823, 1.30876791, 1.09249914, 0.19123131, -0.559993684, -1.1964798, -1.73208964, -1.96052551, -1.97090387, -1.68450224, -1.18609607, 0.0568713844, 0.559426069, -1.50776184, 0.902357519, 0.687616646, 2.65434217, 1.60059738, 1.72873425, 0.851971865, 0.192237675, -0.562314034, -1.24351382, -1.71006656, -1.98122287, -1.95569813, -1.68210328], [-1.26742303, -0.159352243, -0.953586102, -0.0835529268, 0.182150483, 2.40330195, 1.61512733, 2.19160056, 1.39230013, 0.933359087, 0.147084802, -0.592246711, -1.23477864, -1.73430681, -1.97113431, -1.95928669, -1.92948496, -0.648030162, -0.0691489726, -0.544930637, -0.0786520243, 1.78334022, 1.47440624, 2.31880808, 1.75295389, 1.54420459, 0.833359778, 0.13805674, -0.60038352, -1.25942397, -1.72994816, -1.98024297], [-0.378846288, -2.53738356, 1.07427323, -0.632497668, -0.420466244, 0.893209636, 1.07299113, 2.17851806, 1.8652873, 1.97234416, 1.4082185, 0.85480684, 0.112957902, -0.620123982, -1.26252174, -1.74325609, -0.211061597, -2.77000237, 1.90465248, -0.643064976, -0.529782414, -0.0966877639, 0.605645537, 1.70856082, 1.74980497, 2.12571955, 1.79980183, 1.45740414, 0.810303152, 0.100677162, -0.631012857, -1.27829707]]> : tensor<3x32xf32>
  %rows = tensor.cast %x : tensor<3x32xf32> to tensor<?x32xf32>
  %c5 = arith.constant 5 : index
  %n = call @norm(%rows, %g) : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  %n_ok = call @within(%n, %want_rms) : (tensor<?x32xf32>, tensor<3x32xf32>) -> i1
  vector.print str "rms "
  vector.print %n_ok : i1
  %h = call @rope_half(%rows, %c5) : (tensor<?x32xf32>, index) -> tensor<?x32xf32>
  %h_ok = call @within(%h, %want_half) : (tensor<?x32xf32>, tensor<3x32xf32>) -> i1
  vector.print str "rope_half "
  vector.print %h_ok : i1
  %i = call @rope_interleaved(%rows, %c5) : (tensor<?x32xf32>, index) -> tensor<?x32xf32>
  %i_ok = call @within(%i, %want_inter) : (tensor<?x32xf32>, tensor<3x32xf32>) -> i1
  vector.print str "rope_interleaved "
  vector.print %i_ok : i1
  // Decode's row: the last row of the prompt, normed alone.
  %row = tensor.extract_slice %x[2, 0] [1, 32] [1, 1] : tensor<3x32xf32> to tensor<1x32xf32>
  %d = call @norm_row(%row, %g) : (tensor<1x32xf32>, tensor<32xf32>) -> tensor<1x32xf32>
  %want_row = tensor.extract_slice %want_rms[2, 0] [1, 32] [1, 1] : tensor<3x32xf32> to tensor<1x32xf32>
  %d_rows = tensor.cast %d : tensor<1x32xf32> to tensor<?x32xf32>
  %pad = tensor.pad %want_row low[0, 0] high[2, 0] {
  ^bb0(%i0: index, %i1: index):
    %z = arith.constant 0.0 : f32
    tensor.yield %z : f32
  } : tensor<1x32xf32> to tensor<3x32xf32>
  %dpad = tensor.pad %d low[0, 0] high[2, 0] {
  ^bb0(%i0: index, %i1: index):
    %z = arith.constant 0.0 : f32
    tensor.yield %z : f32
  } : tensor<1x32xf32> to tensor<3x32xf32>
  %dpad_rows = tensor.cast %dpad : tensor<3x32xf32> to tensor<?x32xf32>
  %d_ok = call @within(%dpad_rows, %pad) : (tensor<?x32xf32>, tensor<3x32xf32>) -> i1
  vector.print str "decode_row "
  vector.print %d_ok : i1
  %rw = arith.constant dense<[[0.25, 0.24789047, 0.24159749, 0.23122726, 0.2169548, 0.19902095, 0.17772838, 0.15343644, 0.12655507, 0.09753792, 0.066874705, 0.035082903, 0.002699029, -0.029730393, -0.061658077, -0.09254521, -0.121870525, -0.14913914, -0.17389083, -0.19570792, -0.2142222, -0.22912121, -0.24015352, -0.24713296, -0.24994172, -0.24853241, -0.24292883, -0.23322552, -0.21958625, -0.2022412, -0.18148308, -0.15766221], [0.19121055, 0.16871893, 0.14338, 0.11562134, 0.08591144, 0.05475167, 0.022667905, -0.009798408, -0.04209936, -0.07368984, -0.10403671, -0.13262783, -0.1589807, -0.18265058, -0.20323801, -0.22039555, -0.23383364, -0.24332552, -0.24871098, -0.24989913, -0.24686994, -0.23967452, -0.2284343, -0.21333897, -0.19464329, -0.17266278, -0.14776836, -0.12038017, -0.09096043, -0.060005613, -0.028038131, 0.004402527], [0.042491786, 0.010196253, -0.022271354, -0.054363105, -0.08553741, -0.11526817, -0.14305364, -0.1684249, -0.1909538, -0.21026011, -0.22601804, -0.23796162, -0.24588932, -0.24966735, -0.24923193, -0.24459042, -0.23582114, -0.22307211, -0.20655847, -0.18655889, -0.1634109, -0.13750516, -0.10927886, -0.079208344, -0.047801085, -0.015587129, 0.01688988, 0.04908185, 0.080445506, 0.11045155, 0.13859358, 0.16439669], [-0.12621152, -0.15312189, -0.17744814, -0.19877973, -0.21675669, -0.2310756, -0.24149483, -0.24783854, -0.24999969, -0.24794178, -0.24169955, -0.23137835, -0.21715236, -0.19926167, -0.17800818, -0.1537506, -0.12689829, -0.09790441, -0.067258276, -0.03547708, -0.003097166, 0.029335016, 0.061272137, 0.092175215, 0.121522725, 0.14881939, 0.17360455, 0.19545992, 0.21401666, 0.22896162, 0.24004257, 0.24707252]]> : tensor<4x32xf32>
  %want_rw = arith.constant dense<[[0.751046717, 0.248953253], [0.64437139, 0.355628639], [0.634773016, 0.365226984]]> : tensor<3x2xf32>
  %want_re = arith.constant dense<[[0, 1], [0, 1], [3, 2]]> : tensor<3x2xi32>
  %route_w, %route_e = call @router(%rows, %rw) : (tensor<?x32xf32>, tensor<4x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>)
  %r_ok = call @routed(%route_w, %route_e, %want_rw, %want_re) : (tensor<?x2xf32>, tensor<?x2xi32>, tensor<3x2xf32>, tensor<3x2xi32>) -> i1
  vector.print str "router "
  vector.print %r_ok : i1
  return
}
