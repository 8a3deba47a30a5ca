//===- AttnOps.td - attn dialect operations --------------------------------===//
//
// Every op of the attn dialect. Shapes follow DESIGN.md: activations are
// [seq, features] with heads folded into features; the sequence dimension may
// be dynamic, feature dimensions are static. Op-local shape rules that ODS
// constraints cannot say are checked in the C++ verifiers (AttnOps.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "attn/AttnBase.td"
include "attn/AttnEnums.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"

//===----------------------------------------------------------------------===//
// Embeddings and projections
//===----------------------------------------------------------------------===//

def Attn_EmbeddingOp : Attn_Op<"embedding", [Pure]> {
  let summary = "gathers rows of an embedding table by token id";
  let description = [{
    `result[s, :] = table[ids[s], :]`. Used for token embeddings and for
    learned absolute positions (with ids = positions).

    Ids outside `[0, rows(table))` have no meaning; the runtime validates
    token ids before they reach compiled code, and the lowering clamps them so
    that a bad id can never read outside the table.

    The table is `[rows, dim]`, or a packed `[blocks, dim, NR]` table (the
    layout of a packed `attn.linear` weight, see there) when a tied
    embedding doubles as the output projection: row `v` is then
    `table[v / NR, :, v % NR]`. A packed table may be bf16 or q8_0 / q4_0
    bytes, as a packed weight may (see `attn.linear`); the gathered values
    are widened or dequantized to f32.

    `scale` (optional, finite) multiplies every gathered row, in f32:
    Gemma's `sqrt(hidden_size)` and XGLM's `sqrt(d_model)`.

    With `offset(%first)` the table is one rank's shard of a vocabulary split
    over a tensor-parallel group: it holds rows `first ..` of the whole
    table, id `t` reads its row `t - first`, and an id outside the shard
    gives a row of zeros (so that the sum over the ranks, `attn.all_reduce`,
    is the whole table's row).

    Example:
    ```mlir
    %x = attn.embedding %wte[%ids] : tensor<50257x768xf32>, tensor<?xi32> -> tensor<?x768xf32>
    %g = attn.embedding %emb[%ids] scale(4.800000e+01) : tensor<256000x2304xf32>, tensor<?xi32> -> tensor<?x2304xf32>
    %s = attn.embedding %shard[%ids] offset(%first) : tensor<25129x768xf32>, tensor<?xi32> -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Attn_WeightTensor:$table, Attn_TokenIds:$ids,
                       Optional<Index>:$offset, OptionalAttr<F32Attr>:$scale);
  let results = (outs Attn_Tensor2D:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` (`offset` `(` $offset^ `)`)? (`scale` `(` $scale^ `)`)?
    attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_LinearOp : Attn_Op<"linear", [Pure]> {
  let summary = "affine projection x W (+ b) with a stated weight layout";
  let description = [{
    `result[m, n] = sum_k input[m, k] * W[n, k] (+ bias[n])`, where `W` is the
    weight read in the layout the `layout` keyword names:

    - `out_in`: weight is `[out_features, in_features]` (torch `nn.Linear`);
    - `in_out`: weight is `[in_features, out_features]` (GPT-2 `Conv1D`);
    - `packed`: weight is `[ceil(out_features / NR), in_features, NR]`:
      blocks of `NR` output features stored k-major (`W[n, k]` at
      `[n / NR, k, n % NR]`), the last block zero-padded. This is the layout
      the CPU kernels stream; `attn-compile` packs weights into it once, at
      load time. A packed weight may be bf16: the product widens each weight
      to f32 and accumulates in f32. It may also be llama.cpp's q8_0 or
      q4_0 blocks of 32 inputs, as i8 bytes `[NB, in / 32, NR, 34]` (q8_0)
      or `[NB, in / 32, NR, 18]` (q4_0) ordered for the int8 dot product
      (include/attn/Dialect/Attn/IR/PackedWeight.h); the kernel then
      quantizes its input rows to int8 per block of 32, as llama.cpp does.
      The other layouts are f32.

    Stating the layout keeps checkpoints usable as stored: nothing is
    transposed on load, the lowering reads the weight as it lies.

    Example:
    ```mlir
    %qkv = attn.linear %x, %w, %b layout(in_out)
        : tensor<?x768xf32>, tensor<768x2304xf32>, tensor<2304xf32> -> tensor<?x2304xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$input, Attn_WeightTensor:$weight,
                       Optional<Attn_Tensor1D>:$bias,
                       Attn_WeightLayout:$layout);
  let results = (outs Attn_Tensor2D:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `layout` `(` $layout `)` attr-dict `:`
    type($input) `,` type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// in_features and out_features (the result's, for a packed weight).
    int64_t getInFeatures();
    int64_t getOutFeatures();
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization and the residual stream
//===----------------------------------------------------------------------===//

def Attn_LayerNormOp : Attn_Op<"layer_norm",
    [Pure, AllTypesMatch<["input", "result"]>, AllTypesMatch<["gamma", "beta"]>]> {
  let summary = "layer normalization over the innermost dimension";
  let description = [{
    For each row `x` of the innermost dimension (size `D`):
    `mean = sum(x) / D`, `var = sum((x - mean)^2) / D` (biased, as torch),
    `result = (x - mean) / sqrt(var + epsilon) * gamma + beta`.
    `epsilon` must be positive.

    Example (the tutorial's x = [2, 4, 6, 8] gives about [-1.34, -0.45, 0.45, 1.34]):
    ```mlir
    %y = attn.layer_norm %x, %gamma, %beta epsilon(1.0e-05) : tensor<?x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input, Attn_Tensor1D:$gamma,
                       Attn_Tensor1D:$beta, F32Attr:$epsilon);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta `epsilon` `(` $epsilon `)` attr-dict `:`
    type($input) `,` type($gamma)
  }];
  let hasVerifier = 1;
}

def Attn_RmsNormOp : Attn_Op<"rms_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "root-mean-square normalization over the innermost dimension";
  let description = [{
    For each row `x` of the innermost dimension (size `D`):
    `result = x / sqrt(sum(x^2) / D + epsilon) * (gain_offset + gamma)`.
    `epsilon` must be positive; `gain_offset` (optional, finite, default 0)
    is added to the stored gain in f32 before it multiplies: Gemma stores
    `w` and scales by `1 + w`.

    With `head_dim(d)` the row is cut into `D / d` heads of `d` features and
    each head is normalized on its own (`D` above becomes `d`), all with the
    one `gamma` of `d` gains: the qk-norm of Qwen3 and Gemma 3, applied to
    the projected queries and keys before RoPE. `d` must divide `D`.

    Example:
    ```mlir
    %y = attn.rms_norm %x, %gamma epsilon(1.0e-06) : tensor<?x768xf32>, tensor<768xf32>
    %z = attn.rms_norm %x, %w epsilon(1.0e-06) gain_offset(1.0) : tensor<?x768xf32>, tensor<768xf32>
    %q = attn.rms_norm %q0, %qn epsilon(1.0e-06) head_dim(128) : tensor<?x2048xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input, Attn_Tensor1D:$gamma,
                       F32Attr:$epsilon, OptionalAttr<F32Attr>:$gain_offset,
                       OptionalAttr<I64Attr>:$head_dim);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `epsilon` `(` $epsilon `)` (`gain_offset` `(` $gain_offset^ `)`)?
    (`head_dim` `(` $head_dim^ `)`)?
    attr-dict `:` type($input) `,` type($gamma)
  }];
  let extraClassDeclaration = [{
    /// The features normalized together: head_dim, or the whole innermost
    /// dimension.
    int64_t getGroupSize();
  }];
  let hasVerifier = 1;
}

def Attn_ResidualAddOp : Attn_Op<"residual_add",
    [Pure, Commutative, SameOperandsAndResultType]> {
  let summary = "adds a sublayer's output to the residual stream";
  let description = [{
    Elementwise `lhs + rhs`. The sign of a zero result is unspecified (as
    with a no-signed-zeros add), which makes `x + 0` fold to `x`.

    Example:
    ```mlir
    %h = attn.residual_add %x, %attn_out : tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$lhs, Attn_Tensor:$rhs);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Positional encodings
//===----------------------------------------------------------------------===//

def Attn_RopeOp : Attn_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding of queries or keys";
  let description = [{
    Rotates the first `rotary_dims` features of each head of `input`
    (`[seq, heads * head_dim]`) by its position; the other
    `head_dim - rotary_dims` features of the head pass through unchanged.
    `rotary_dims` defaults to `head_dim` (every feature rotates).

    Row `s` has position `p = offset + s`. Pair `i` of a head
    (`0 <= i < r / 2`, `r = rotary_dims`) turns by the angle `p * f_i`, and
    the rotated features are scaled by `A = attention_factor` (default 1):
    `(a, b) -> (A (a cos - b sin), A (b cos + a sin))`.

    The inverse frequency `f_i` of pair `i` is one of:
    - `theta(T)`: `f_i = T^(-2i / r)` (the original RoPE);
    - `frequencies(dense<[f_0, ..., f_(r/2-1)]> : tensor<(r/2)xf64>)`: given
      per pair, `r / 2` finite non-negative numbers (f64, printed exactly,
      so a table survives a round trip through text). The compiler resolves
      the static scalings of Hugging Face's `rope_scaling` (`linear`, `yarn`,
      `llama3`) into this table, and yarn's attention factor into
      `attention_factor`;
    - `theta(T) dynamic_ntk(factor = k, max_positions = M)`: dynamic NTK
      scaling, `f_i = T'^(-2i / r)` with
      `T' = T * (k * L / M - (k - 1))^(r / (r - 2))` and
      `L = max(offset + seq, M)`, the number of positions of this call (a
      runtime value). Every row of one call uses the same `T'`; keys cached
      by earlier calls keep the base they were rotated with, as in Hugging
      Face's cached decoding. At or below `M` positions `T' = T`.
    - `frequencies(...) long_frequencies(dense<[...]> : tensor<(r/2)xf64>,
      after = M)`: LongRoPE (Phi-3.5, Phi-4-mini). A call whose last
      position is past `M` (`offset + seq > M`, a runtime test) rotates all
      its rows with the long table, any other call with `frequencies`; as
      with dynamic NTK, keys cached by earlier calls keep the table they were
      rotated with, as Hugging Face's cached decoding does.

    The pairing keyword says which features of the rotary part form pair `i`:
    - `rotate_half`: `(x[i], x[i + r/2])` (Hugging Face LLaMA, GPT-NeoX,
      Phi-3);
    - `interleaved`: `(x[2i], x[2i + 1])` (RoFormer, Meta's LLaMA, GPT-J).

    With an input norm, `rms_norm(%g : tensor<head_dim x f32>) epsilon(e)
    [gain_offset(c)]`, each head is first normalized exactly as
    `attn.rms_norm ... head_dim(head_dim)` with those operands would (the
    qk-norm of Qwen3 and Gemma 3), and then rotated: `attn-fuse-rope-norms`
    folds such an `attn.rms_norm` into the rope it feeds, so the normalized
    heads are never stored.

    `head_dim` must be even and divide the feature dimension; `rotary_dims`
    must be even, positive and at most `head_dim` (more than 2 with
    `dynamic_ntk`); exactly one of `theta` and `frequencies` is given,
    `dynamic_ntk` needs `theta`, and `long_frequencies` needs `frequencies`
    (a table of the same length, finite and non-negative; `after` positive). `theta`, `attention_factor` and the NTK
    factor must be positive, `max_positions` positive. `offset` is the
    position of the first row (0 for a prompt, the cache length during
    decode). Angles, cos and sin are computed in f64.

    Examples: every feature with `theta`; `linear` scaling by 2 of
    `theta = 100` over the first 4 of 8 features (`f = [1, 0.1] / 2`); a
    frequency table with an attention factor (yarn's `0.1 ln(4) + 1` for
    factor 4); dynamic NTK:
    ```mlir
    %qr = attn.rope %q offset(%pos) head_dim(64) theta(1.0e+04) rotate_half : tensor<?x768xf32>
    %kr = attn.rope %k offset(%pos) head_dim(8) rotary_dims(4) frequencies(dense<[5.0e-01, 5.0e-02]> : tensor<2xf64>) rotate_half : tensor<?x16xf32>
    %yr = attn.rope %k offset(%pos) head_dim(8) frequencies(dense<[1.0, 0.1, 0.01, 0.001]> : tensor<4xf64>) attention_factor(1.1386) interleaved : tensor<?x16xf32>
    %dr = attn.rope %q offset(%pos) head_dim(64) theta(1.0e+04) dynamic_ntk(factor = 2.0, max_positions = 2048) rotate_half : tensor<?x768xf32>
    %lr = attn.rope %k offset(%pos) head_dim(8) rotary_dims(4) frequencies(dense<[1.0, 0.05]> : tensor<2xf64>) long_frequencies(dense<[0.5, 0.005]> : tensor<2xf64>, after = 4096) attention_factor(1.19) rotate_half : tensor<?x16xf32>
    ```
    Qwen3's queries, normalized per head and rotated in one pass:
    ```mlir
    %qn = attn.rope %q offset(%pos) head_dim(128) theta(1.0e+06) rms_norm(%g : tensor<128xf32>) epsilon(1.0e-06) rotate_half : tensor<?x2048xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$input, Index:$offset,
                       I64Attr:$head_dim,
                       OptionalAttr<I64Attr>:$rotary_dims,
                       OptionalAttr<F32Attr>:$theta,
                       OptionalAttr<F64ElementsAttr>:$frequencies,
                       OptionalAttr<F64ElementsAttr>:$long_frequencies,
                       OptionalAttr<I64Attr>:$long_after,
                       OptionalAttr<F64Attr>:$ntk_factor,
                       OptionalAttr<I64Attr>:$ntk_max_positions,
                       OptionalAttr<F64Attr>:$attention_factor,
                       Optional<Attn_Tensor1D>:$norm_gamma,
                       OptionalAttr<F32Attr>:$norm_epsilon,
                       OptionalAttr<F32Attr>:$norm_gain_offset,
                       Attn_RopePairing:$pairing);
  let results = (outs Attn_Tensor2D:$result);
  let assemblyFormat = [{
    $input `offset` `(` $offset `)` `head_dim` `(` $head_dim `)`
    (`rotary_dims` `(` $rotary_dims^ `)`)?
    (`theta` `(` $theta^ `)`)? (`frequencies` `(` $frequencies^ `)`)?
    (`long_frequencies` `(` $long_frequencies^ `,` `after` `=` $long_after `)`)?
    (`dynamic_ntk` `(` `factor` `=` $ntk_factor^ `,`
       `max_positions` `=` $ntk_max_positions `)`)?
    (`attention_factor` `(` $attention_factor^ `)`)?
    `` custom<RmsInputNorm>($norm_gamma, type($norm_gamma), $norm_epsilon,
                            $norm_gain_offset)
    $pairing attr-dict `:` type($input)
  }];
  let extraClassDeclaration = [{
    /// rotary_dims, or head_dim when the attribute is absent.
    int64_t getNumRotaryDims();
    /// attention_factor, or 1 when the attribute is absent.
    double getEffectiveAttentionFactor();
    bool hasInputNorm() { return static_cast<bool>(getNormGamma()); }
  }];
  let hasVerifier = 1;
}

def Attn_SinusoidalPEOp : Attn_Op<"sinusoidal_pe",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "adds the sinusoidal positional encoding of 'Attention Is All You Need'";
  let description = [{
    `result[s, 2i]   = input[s, 2i]   + sin(p / base^(2i / D))`,
    `result[s, 2i+1] = input[s, 2i+1] + cos(p / base^(2i / D))`, with
    `p = offset + s` and `D` the (even) feature dimension. `base` is 10000 in
    the original transformer. Angles are computed in f64.

    With `halves` (fairseq's layout, XGLM's), the sines fill the first half
    and the cosines the second, with frequencies `base^(-k / (D/2 - 1))`:
    `result[s, k] = input[s, k] + sin(p base^(-k/(D/2-1)))`,
    `result[s, D/2 + k] = input[s, D/2 + k] + cos(p base^(-k/(D/2-1)))`,
    `k < D/2`; `D` must then be at least 4. (XGLM's position `p` is its
    table row, the token position + 2: the offset operand carries it.)

    Example:
    ```mlir
    %y = attn.sinusoidal_pe %x offset(%pos) base(1.0e+04) : tensor<?x512xf32>
    %z = attn.sinusoidal_pe %x offset(%row) base(1.0e+04) halves : tensor<?x1024xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$input, Index:$offset,
                       F32Attr:$base,
                       DefaultValuedAttr<Attn_SinusoidalLayout,
                                         "SinusoidalLayout::Interleaved">:$layout);
  let results = (outs Attn_Tensor2D:$result);
  let assemblyFormat = [{
    $input `offset` `(` $offset `)` `base` `(` $base `)` ($layout^)? attr-dict `:`
    type($input)
  }];
  let hasVerifier = 1;
}

def Attn_RelativePositionBiasOp : Attn_Op<"relative_position_bias",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "T5's bucketed relative position bias, for attention's bias operand";
  let description = [{
    Builds the `[heads, seq_q, seq_kv]` bias that `attn.attention` adds to
    its scaled scores (its `bias` operand) from T5's learned table
    (Hugging Face's `relative_attention_bias.weight`, `[num_buckets, heads]`):

    `result[h, i, j] = table[bucket(j - p_i), h]`

    Query row `i` sits at position `p_i = L - seq_q + i` and key `j` at `j`,
    as `attn.attention` places them: `L = min(kv_len, seq_kv)`, with
    `kv_len` (optional, `index`) the number of valid keys, `seq_kv` when
    absent. Give the bias the `kv_len` the attention gets, and the two agree
    on every position. Entries for keys past `L` follow the same formula;
    attention masks them.

    `bucket` is T5's `_relative_position_bucket` of the relative position
    `rp = j - p_i`, with `num_buckets` (default 32) and `max_distance`
    (default 128):
    - `bidirectional` (an encoder): half of the buckets for each direction,
      `n = num_buckets / 2`, keys after the query offset by `n`, and
      `rp = |rp|`; without it (a causal decoder) `n = num_buckets` and
      `rp = max(-rp, 0)`, so every later key shares bucket 0;
    - `rp < n / 2` is its own bucket;
    - otherwise `min(n / 2 + long(log(float(rp) / (n / 2)) / L_d * (n - n / 2)), n - 1)`,
      each step in f32 in this order, `L_d = float(log(max_distance / (n / 2)))`
      (computed in f64, then rounded), `long` truncating: distances up to
      `max_distance` spread logarithmically, farther ones share bucket `n - 1`.

    `num_buckets` is at least 2 (at least 4 and even with `bidirectional`)
    and `max_distance` exceeds `n / 2`. The table is static with
    `num_buckets` rows and one column per head of the result. `sizes` gives
    the dynamic dimensions of the result, in order, as `tensor.empty` does.

    Examples: a T5 encoder over a prompt; a decoder step over a static cache
    of which `%n` rows are valid, its one query at position `%n - 1`:
    ```mlir
    %b = attn.relative_position_bias %table sizes(%s, %s) bidirectional
        : tensor<32x8xf32> -> tensor<8x?x?xf32>
    %o = attn.attention %q, %k, %v heads(8) scale(1.0) bias(%b : tensor<8x?x?xf32>)
        : tensor<?x512xf32>, tensor<?x512xf32>, tensor<?x512xf32> -> tensor<?x512xf32>
    %d = attn.relative_position_bias %table kv_len(%n) num_buckets(32) max_distance(128)
        : tensor<32x8xf32> -> tensor<8x1x2048xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$table, Variadic<Index>:$sizes,
                       Optional<Index>:$kv_len,
                       DefaultValuedAttr<I64Attr, "32">:$num_buckets,
                       DefaultValuedAttr<I64Attr, "128">:$max_distance,
                       UnitAttr:$bidirectional);
  let results = (outs Attn_Tensor3D:$result);
  let assemblyFormat = [{
    $table (`sizes` `(` $sizes^ `)`)? (`kv_len` `(` $kv_len^ `)`)?
    (`num_buckets` `(` $num_buckets^ `)`)? (`max_distance` `(` $max_distance^ `)`)?
    (`bidirectional` $bidirectional^)? attr-dict `:` type($table) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The buckets of one direction: num_buckets, or half of them with
    /// bidirectional.
    int64_t getBucketsPerDirection();
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Attn_AttentionOp : Attn_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention: multi-head, grouped-query, causal";
  let description = [{
    `query` is `[seq_q, heads * head_dim]`; `key` and `value` are
    `[seq_kv, kv_heads * head_dim]`. Query head `h` attends with key/value
    head `h / (heads / kv_heads)` (grouped-query attention; `kv_heads` defaults
    to `heads`, and must divide it). For each head:

    `result_h = softmax(scale * Q_h K_g^T + bias_h + mask) V_g`

    - `scale` defaults to `1 / sqrt(head_dim)`.
    - `softcap(c)` (optional, `c > 0`): the scaled scores are squashed into
      `(-c, c)` as `c * tanh(score / c)` before anything is added to them
      (Gemma 2's `attn_logit_softcapping`); then bias, ALiBi and the mask.
    - `bias` (optional, `[heads or 1, seq_q, seq_kv]`) is added to the scaled
      scores: ALiBi slopes times distances, or a T5 relative bias.
    - `kv_len` (optional, `index`) is the number of valid keys; keys at
      `j >= kv_len` are masked. It defaults to `seq_kv`.
    - Query `i` sits at position `p_i = kv_len - seq_q + i` (aligned to the
      end of the valid keys) and key `j` at position `j`.
    - `causal`: query `i` sees keys `j <= p_i`. With `seq_q == kv_len` this
      is the usual lower-triangular mask; with `seq_q == 1` it is a decode
      step over the whole cache.
    - `window(W)` (with `causal`, `W >= 1`): query `i` sees only the `W`
      keys `p_i - W < j <= p_i` (Mistral's sliding window, as Hugging Face
      masks it: `kv_idx > q_idx - sliding_window`).
    - `alibi(slopes)` (one finite slope per head): adds `slope_h * (j - p_i)`
      to the scaled scores of head `h` (ALiBi; BLOOM adds `slope_h * j`,
      which differs by a constant along each row and so gives the same
      softmax). It is computed where the score is, never stored.
    - `sinks` (optional, `[heads]`): a learned logit per head that joins
      each row's softmax as one more key with no value (gpt-oss's attention
      sinks): `result_h = sum_j e^(s_j) V_j / (sum_j e^(s_j) + e^(sink_h))`
      over the visible keys, so a head can attend to nothing. The sink is in
      the units of the scaled, capped and biased scores.

    A query row that sees no key at all (every key masked, e.g. causal with
    `seq_q > kv_len`) yields zeros, not NaN.

    `key` and `value` share one element type: f32, or bf16 / f16 when they
    come from a cache held in that precision. They are widened to f32 as
    they are read; scores, softmax and the output accumulate in f32.

    Example (decode of one token with 12 query heads sharing 4 KV heads):
    ```mlir
    %o = attn.attention %q, %k, %v heads(12) kv_heads(4) causal kv_len(%n)
        : tensor<1x768xf32>, tensor<?x256xf32>, tensor<?x256xf32> -> tensor<1x768xf32>
    ```
    gpt-oss's: a window on every other layer, and a sink per head:
    ```mlir
    %s = attn.attention %q, %k, %v heads(64) kv_heads(8) causal window(128) sinks(%sinks : tensor<64xf32>)
        : tensor<?x4096xf32>, tensor<?x512xf32>, tensor<?x512xf32> -> tensor<?x4096xf32>
    ```
    A prompt with a sliding window of 4096 keys, and one with ALiBi:
    ```mlir
    %w = attn.attention %q, %k, %v heads(32) kv_heads(8) causal window(4096)
        : tensor<?x4096xf32>, tensor<?x1024xf32>, tensor<?x1024xf32> -> tensor<?x4096xf32>
    %a = attn.attention %q, %k, %v heads(4) causal alibi([2.500000e-01, 6.250000e-02, 1.562500e-02, 3.906250e-03])
        : tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32> -> tensor<?x256xf32>
    ```
    Gemma 2's: scores scaled by `query_pre_attn_scalar^-1/2` and capped at 50:
    ```mlir
    %g = attn.attention %q, %k, %v heads(8) kv_heads(4) scale(6.250000e-02) softcap(5.000000e+01) causal window(4096)
        : tensor<?x2048xf32>, tensor<?x1024xf32>, tensor<?x1024xf32> -> tensor<?x2048xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$query, Attn_CacheTensor2D:$key,
                       Attn_CacheTensor2D:$value, Optional<Attn_Tensor3D>:$bias,
                       Optional<Attn_Tensor1D>:$sinks, Optional<Index>:$kv_len,
                       I64Attr:$heads,
                       OptionalAttr<I64Attr>:$kv_heads,
                       OptionalAttr<F32Attr>:$scale,
                       OptionalAttr<F32Attr>:$softcap,
                       UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<DenseF32ArrayAttr>:$alibi);
  let results = (outs Attn_Tensor2D:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `heads` `(` $heads `)` (`kv_heads` `(` $kv_heads^ `)`)?
    (`scale` `(` $scale^ `)`)? (`softcap` `(` $softcap^ `)`)?
    (`causal` $causal^)? (`window` `(` $window^ `)`)?
    (`alibi` `(` $alibi^ `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)? (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`kv_len` `(` $kv_len^ `)`)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// kv_heads, or heads when the attribute is absent.
    int64_t getNumKvHeads();
    /// The feature size of one head.
    int64_t getHeadDim();
    /// The scale applied to Q K^T: the attribute, or 1/sqrt(head_dim).
    double getEffectiveScale();
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Attn_AttentionProbabilitiesOp : Attn_Op<"attention_probabilities",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the softmax weights of attention, per head: [heads, seq_q, seq_kv]";
  let description = [{
    The probabilities `attn.attention` with the same operands and attributes
    multiplies the values by: for each head `h`,

    `result[h] = softmax(softcap(scale * Q_h K_g^T) + bias_h + mask)`

    with query positions, `kv_len`, `softcap`, `causal`, `window`, `alibi`
    and `sinks` exactly as `attn.attention` defines them. Masked keys (after
    the causal diagonal, outside the window, at `j >= kv_len`) get 0, so each
    row of a query that sees some key sums to 1 (less the sink's share, with
    `sinks`); a row that sees none is all zeros. The scores
    accumulate in f32 and the softmax subtracts the row maximum, as the fused
    kernel does.

    The whole `[seq_q, seq_kv]` matrix of every head is materialized: this is
    for inspecting a model (attn-inspect), not for its fast path.

    Example (the weights of a prompt's grouped-query attention):
    ```mlir
    %p = attn.attention_probabilities %q, %k heads(6) kv_heads(2) causal
        : tensor<?x192xf32>, tensor<?x64xf32> -> tensor<6x?x?xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$query, Attn_CacheTensor2D:$key,
                       Optional<Attn_Tensor3D>:$bias, Optional<Attn_Tensor1D>:$sinks,
                       Optional<Index>:$kv_len,
                       I64Attr:$heads,
                       OptionalAttr<I64Attr>:$kv_heads,
                       OptionalAttr<F32Attr>:$scale,
                       OptionalAttr<F32Attr>:$softcap,
                       UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<DenseF32ArrayAttr>:$alibi);
  let results = (outs Attn_Tensor3D:$result);
  let assemblyFormat = [{
    $query `,` $key `heads` `(` $heads `)` (`kv_heads` `(` $kv_heads^ `)`)?
    (`scale` `(` $scale^ `)`)? (`softcap` `(` $softcap^ `)`)?
    (`causal` $causal^)? (`window` `(` $window^ `)`)?
    (`alibi` `(` $alibi^ `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)? (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    (`kv_len` `(` $kv_len^ `)`)?
    attr-dict `:` type($query) `,` type($key) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// kv_heads, or heads when the attribute is absent.
    int64_t getNumKvHeads();
    /// The feature size of one head.
    int64_t getHeadDim();
    /// The scale applied to Q K^T: the attribute, or 1/sqrt(head_dim).
    double getEffectiveScale();
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

def Attn_KvCacheAppendOp : Attn_Op<"kv_cache_append",
    [Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "writes new key or value rows into a cache at a position";
  let description = [{
    `cache` is `[max_seq, kv_heads * head_dim]`. Returns the cache with rows
    `[position, position + rows(update))` replaced by `update`. After
    bufferization this is an in-place write into the buffer the runtime owns.
    Writing past `max_seq` has no meaning; the runtime rejects positions that
    would overflow the context before calling compiled code.

    A bf16 or f16 cache stores each f32 update element rounded to nearest
    (ties to even), as `arith.truncf` rounds; f16 overflows to infinity past
    65504.

    With `ring`, the cache is a ring of `R` rows (a sliding window's cache:
    memory for `R` positions however long the sequence): position `p` lives
    in row `p mod R`, so update row `t` goes to row `(position + t) mod R`.
    An update of more than `R` rows writes only its last `R` (the earlier
    ones would be overwritten by them).

    Example:
    ```mlir
    %kc2 = attn.kv_cache_append %k into %kc[%pos] : tensor<?x256xf32> into tensor<2048x256xf32>
    %kr2 = attn.kv_cache_append %k into %kr[%pos] ring : tensor<?x256xf32> into tensor<4096x256xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$update, Attn_CacheTensor2D:$cache, Index:$position,
                       UnitAttr:$ring);
  let results = (outs Attn_CacheTensor2D:$result);
  let assemblyFormat = [{
    $update `into` $cache `[` $position `]` (`ring` $ring^)? attr-dict `:` type($update)
    `into` type($cache)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Attn_KvCacheReadOp : Attn_Op<"kv_cache_read", [Pure]> {
  let summary = "the valid prefix of a key or value cache";
  let description = [{
    Returns rows `[0, min(length, rows))` of `cache` as a tensor with a
    dynamic row count; it lowers to a slice (a view after bufferization),
    never a copy. The result has the cache's element type.

    With `ring(%end)`, the cache is a ring as `attn.kv_cache_append ... ring`
    writes it, and the result holds positions `[end - n, end)` in order,
    `n = min(length, rows, end)`: the keys before a chunk of new ones, for
    attention over both. It lowers to a copy of at most two slices (the
    ring may wrap).

    Example:
    ```mlir
    %k = attn.kv_cache_read %kc[%len] : tensor<2048x256xf32> -> tensor<?x256xf32>
    %w = attn.kv_cache_read %kr[%n] ring(%pos) : tensor<4096x256xf32> -> tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Attn_CacheTensor2D:$cache, Index:$length, Optional<Index>:$ring_end);
  let results = (outs Attn_CacheTensor2D:$result);
  let assemblyFormat = [{
    $cache `[` $length `]` (`ring` `(` $ring_end^ `)`)? attr-dict `:` type($cache) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Activations and softmax
//===----------------------------------------------------------------------===//

def Attn_GeluOp : Attn_Op<"gelu", [Pure, SameOperandsAndResultType]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `erf`:  `0.5 x (1 + erf(x / sqrt(2)))`.
    `tanh`: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (GPT-2's
    `gelu_new`).

    Example:
    ```mlir
    %y = attn.gelu %x tanh : tensor<?x3072xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input, Attn_GeluApproximation:$approximation);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$input $approximation attr-dict `:` type($result)";
}

def Attn_SiluOp : Attn_Op<"silu", [Pure, SameOperandsAndResultType]> {
  let summary = "sigmoid linear unit x * sigmoid(x)";
  let description = [{
    Example:
    ```mlir
    %y = attn.silu %x : tensor<?x2048xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Attn_SwigluOp : Attn_Op<"swiglu", [Pure, SameOperandsAndResultType]> {
  let summary = "SiLU-gated linear unit silu(gate) * up";
  let description = [{
    The gate of a LLaMA-style MLP: `down(silu(gate(x)) * up(x))` is
    `attn.linear` of `attn.swiglu` of two `attn.linear`s.

    Example:
    ```mlir
    %h = attn.swiglu %gate, %up : tensor<?x2048xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$gate, Attn_Tensor:$up);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` type($result)";
}

def Attn_ReluOp : Attn_Op<"relu", [Pure, SameOperandsAndResultType]> {
  let summary = "rectified linear unit max(x, 0)";
  let description = [{
    The activation of the original transformer's and OPT's MLP. A NaN input
    stays NaN.

    Example:
    ```mlir
    %y = attn.relu %x : tensor<?x3072xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Attn_GegluOp : Attn_Op<"geglu", [Pure, AllTypesMatch<["gate", "up", "result"]>]> {
  let summary = "GELU-gated linear unit gelu(gate) * up";
  let description = [{
    The gate of a Gemma-style MLP, `down(gelu(gate(x)) * up(x))`, with
    `gelu` in the form the keyword names (see `attn.gelu`).

    Example:
    ```mlir
    %h = attn.geglu %gate, %up tanh : tensor<?x16384xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$gate, Attn_Tensor:$up,
                       Attn_GeluApproximation:$approximation);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$gate `,` $up $approximation attr-dict `:` type($result)";
}

def Attn_SoftcapOp : Attn_Op<"softcap", [Pure, SameOperandsAndResultType]> {
  let summary = "logit soft-capping c * tanh(x / c)";
  let description = [{
    Squashes every element into `(-cap, cap)`: `cap * tanh(x / cap)`, nearly
    the identity for `|x|` well below `cap`. Gemma 2 caps its final logits
    this way (`final_logit_softcapping`, 30); the attention scores' cap is
    `attn.attention`'s `softcap` attribute. `cap` must be positive and finite.

    Example:
    ```mlir
    %l = attn.softcap %logits cap(3.000000e+01) : tensor<1x256000xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input, F32Attr:$cap);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$input `cap` `(` $cap `)` attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Attn_SoftmaxOp : Attn_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax over the innermost dimension";
  let description = [{
    `result = exp(x - max(x)) / sum(exp(x - max(x)))` along the innermost
    dimension (subtracting the row maximum keeps exp from overflowing).

    Example:
    ```mlir
    %p = attn.softmax %logits : tensor<?x32000xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor:$input);
  let results = (outs Attn_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Attn_MoeRouterOp : Attn_Op<"moe_router", [Pure]> {
  let summary = "chooses each token's top-k experts and their weights";
  let description = [{
    The router of a mixture-of-experts MLP. For `input` `[tokens, hidden]`,
    `weight` `[experts, hidden]` (torch `nn.Linear`, `out_in`) and an
    optional `bias` `[experts]`, each token's logits are
    `l[e] = sum_k input[k] * weight[e, k] (+ bias[e])`, and then:

    - `softmax_top_k` (Mixtral, Qwen3-MoE): `p = softmax(l)` over every
      expert, the `top_k` largest `p` are chosen; with `normalize` they are
      divided by their sum (Mixtral always, Qwen3-MoE when
      `norm_topk_prob`), so the chosen weights sum to 1;
    - `top_k_softmax` (gpt-oss): the `top_k` largest logits are chosen and
      their weights are the softmax of those `top_k` logits alone.

    Results: `weights` `[tokens, top_k]` and `experts` `[tokens, top_k]`
    (i32), best first. Of equal scores the lower expert index ranks first,
    so routing never depends on the order of evaluation.

    Example (Mixtral: 8 experts, 2 per token):
    ```mlir
    %w, %e = attn.moe_router %x, %gate top_k(2) softmax_top_k normalize
        : tensor<?x4096xf32>, tensor<8x4096xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$input, Attn_Tensor2D:$weight,
                       Optional<Attn_Tensor1D>:$bias, I64Attr:$top_k,
                       Attn_MoeScoring:$scoring, UnitAttr:$normalize);
  let results = (outs Attn_Tensor2D:$weights, Attn_ExpertIds:$experts);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `top_k` `(` $top_k `)` $scoring
    (`normalize` $normalize^)? attr-dict `:` type($input) `,` type($weight)
    (`,` type($bias)^)? `->` type($weights) `,` type($experts)
  }];
  let extraClassDeclaration = [{
    int64_t getNumExperts() {
      return cast<ShapedType>(getWeight().getType()).getDimSize(0);
    }
  }];
  let hasVerifier = 1;
}

def Attn_MoeExpertsOp : Attn_Op<"moe_experts", [Pure, AttrSizedOperandSegments]> {
  let summary = "each token's chosen experts' gated MLPs, weighted and summed";
  let description = [{
    For `input` `[tokens, hidden]` and a router's `weights` and `experts`
    `[tokens, top_k]`, with `gate` and `up` `[num_experts, ffn, hidden]` and
    `down` `[num_experts, hidden, ffn]` (each expert's `nn.Linear` weights,
    stacked), for every token `t`:

    ```
    result[t] = sum_j weights[t, j] * (down[e] h_j + down_bias[e])
    h_j       = act(gate[e] x + gate_bias[e], up[e] x + up_bias[e]),
                e = experts[t, j], x = input[t]
    ```

    with `act` the `activation`: `swiglu`, `silu(g) * u`; or
    `clamped_swiglu` (gpt-oss), with `g' = min(g, limit)` and
    `u' = clamp(u, -limit, limit)`, `g' * sigmoid(alpha * g') * (u' + 1)`.
    The biases are optional and come together (gpt-oss has them). An expert
    index outside `[0, num_experts)` is clamped into it, as attn.embedding
    clamps token ids. Only the chosen experts are evaluated: a token costs
    `top_k` expert MLPs whatever `num_experts` is.

    An optional `shared` `[tokens, hidden]` is a shared expert's output (an
    MLP every token runs, computed by ordinary ops), added to the routed sum;
    with `shared_gate` `[tokens, 1]` (the shared expert gate's logit per
    token) it is scaled first: `result[t] += sigmoid(shared_gate[t]) *
    shared[t]` (Qwen2-MoE, Qwen3-Next). It joins after the routed sum, as
    HF adds it.

    The expert weights may instead be packed as `attn.linear`'s `packed`
    layout, one slab per expert: `[num_experts, <packed shape>]`, i.e.
    `[E, blocks, in, NR]` of f32 or bf16, or `[E, blocks, in / 32, NR, 34 |
    18]` of i8 (q8_0 / q4_0), as `attn-compile` packs a model's experts;
    `ffn` is then the down projection's input features.

    Example (Qwen3-MoE's layer shape: 128 experts of 768, 8 per token):
    ```mlir
    %y = attn.moe_experts %x, %w, %e, %gate, %up, %down swiglu
        : tensor<?x2048xf32>, tensor<?x8xf32>, tensor<?x8xi32>,
          tensor<128x768x2048xf32>, tensor<128x768x2048xf32>, tensor<128x2048x768xf32>
        -> tensor<?x2048xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$input, Attn_Tensor2D:$weights,
                       Attn_ExpertIds:$experts, Attn_WeightTensor:$gate,
                       Attn_WeightTensor:$up, Attn_WeightTensor:$down,
                       Optional<Attn_Tensor2D>:$gate_bias,
                       Optional<Attn_Tensor2D>:$up_bias,
                       Optional<Attn_Tensor2D>:$down_bias,
                       Optional<Attn_Tensor2D>:$shared,
                       Optional<Attn_Tensor2D>:$shared_gate,
                       Attn_MoeActivation:$activation,
                       OptionalAttr<F32Attr>:$alpha,
                       OptionalAttr<F32Attr>:$limit);
  let results = (outs Attn_Tensor2D:$result);
  let assemblyFormat = [{
    $input `,` $weights `,` $experts `,` $gate `,` $up `,` $down
    (`biases` `(` $gate_bias^ `,` $up_bias `,` $down_bias `:` type($gate_bias) `,` type($up_bias) `,` type($down_bias) `)`)?
    (`shared` `(` $shared^ `:` type($shared) `)`)?
    (`shared_gate` `(` $shared_gate^ `:` type($shared_gate) `)`)?
    $activation (`alpha` `(` $alpha^ `)`)? (`limit` `(` $limit^ `)`)? attr-dict
    `:` type($input) `,` type($weights) `,` type($experts) `,` type($gate) `,`
    type($up) `,` type($down) `->` type($result)
  }];
  let extraClassDeclaration = [{
    int64_t getNumExperts() {
      return cast<ShapedType>(getGate().getType()).getDimSize(0);
    }
    /// Whether the expert weights are packed slabs (else [E, out, in] f32).
    bool hasPackedExperts();
    /// Each expert's MLP width.
    int64_t getFfnSize();
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor parallelism
//===----------------------------------------------------------------------===//

// The collectives communicate: no Pure trait, so that nothing removes,
// duplicates or reorders them. Every rank runs the same library, hence the
// same sequence of collectives with the same shapes.

def Attn_AllReduceOp : Attn_Op<"all_reduce",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "sums a tensor over the ranks of a tensor-parallel group";
  let description = [{
    Each of the `ranks` processes of the group (`attn-compile
    --tensor-parallel N`) holds a partial result: the product of its slice
    of a projection's input features (attention's output projection over its
    heads, the MLP's down projection over its columns, an embedding shard).
    The result is the elementwise sum of every rank's `input`, the same on
    every rank. It lowers to a call of the collective the runtime installs
    (`attn_model_set_collectives`, runtime/include/attnrt/model_abi.h); the
    compiled library does not link MPI.

    Example:
    ```mlir
    %o = attn.all_reduce %partial ranks(2) : tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$input,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$ranks);
  let results = (outs Attn_Tensor2D:$result);
  let assemblyFormat = "$input `ranks` `(` $ranks `)` attr-dict `:` type($result)";
}

def Attn_AllGatherOp : Attn_Op<"all_gather"> {
  let summary = "concatenates the features of every rank of a tensor-parallel group";
  let description = [{
    `result[s, r * K + k] = input_r[s, k]` where `input_r` is rank `r`'s
    `input` of `K` features: the output projection's logits of each rank's
    slice of the vocabulary, concatenated in rank order. Every rank gets the
    whole result. The result has `ranks * K` features.

    Example:
    ```mlir
    %all = attn.all_gather %shard ranks(2) : tensor<?x16000xf32> -> tensor<?x32000xf32>
    ```
  }];
  let arguments = (ins Attn_Tensor2D:$input,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$ranks);
  let results = (outs Attn_Tensor2D:$result);
  let assemblyFormat = [{
    $input `ranks` `(` $ranks `)` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_GroupRankOp : Attn_Op<"group_rank", [Pure]> {
  let summary = "this process's rank in its tensor-parallel group";
  let description = [{
    The rank, in `[0, ranks)`, of the process running the code: which slice
    of the heads, the MLP columns and the vocabulary its weights are. The
    runtime sets it once, before the weights are packed.

    Example:
    ```mlir
    %r = attn.group_rank ranks(2) : index
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<2>]>:$ranks);
  let results = (outs Index:$result);
  let assemblyFormat = "`ranks` `(` $ranks `)` attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Code generation ops
//===----------------------------------------------------------------------===//

def Attn_GemmOp : Attn_Op<"gemm", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<DestinationStyleOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "register-tiled product with a packed weight and a fused epilogue";
  let description = [{
    A code generation op, produced from `attn.linear` with a packed weight
    (and, by `attn-fuse-linear-epilogues`, the elementwise ops around it);
    `attn-lower-gemm` turns it into vector code after bufferization. It is in
    destination-passing style on tensors or on memrefs.

    For `input` `[M, K]`, `weight` packed `[NB, K, NR]` (f32, or bf16
    widened to f32 as it is loaded; or q8_0 / q4_0 bytes
    `[NB, K / 32, NR, 34 | 18]`, multiplied by int8 dot products with the
    input quantized per row and block of 32) and `init` `[M, N]`:

    ```
    x = norm(input)                           (when present: rms_norm or
                                               layer_norm of each row, as
                                               attn.rms_norm / attn.layer_norm)
    acc[m, n] = sum_k x[m, k] * weight[n / NR, k, n % NR]
    v = acc * row_scale[m] + bias[n]          (each when present)
    v = epilogue(v)                           (none, gelu_tanh, gelu_erf, silu;
                                               swiglu: silu(v) * v2, with v2 the
                                               same from weight2 and bias2;
                                               clamped_swiglu(alpha, limit):
                                               g sigmoid(alpha g) (u + 1),
                                               g = min(v, limit),
                                               u = clamp(v2, -limit, limit))
    result[m, n] = v + residual[m, n]         (when present)
    ```

    Every input element is read once per output tile and every output
    element written once: the bias, activation, gating and residual add cost
    no pass over memory of their own. The input norm (fused from the norm
    that feeds the projection) is applied where the kernel prepares its
    input anyway: as the rows are quantized for q8_0 / q4_0, so the
    normalized rows are never stored in f32; the kernels that read f32 rows
    as they are (f32 and bf16 weights, AMX) normalize them into a copy
    first.

    The norm is written as the op it replaces: `rms_norm(%gamma : type)
    epsilon(e)` with an optional `gain_offset(c)`, or `layer_norm(%gamma,
    %beta : type, type) epsilon(e)`; `gamma` and `beta` are `[K]`.

    Example (the down projection of a LLaMA MLP, added to the residual
    stream):
    ```mlir
    %y = attn.gemm none ins(%h, %w : tensor<?x2048xf32>, tensor<24x2048x32xf32>)
        residual(%x : tensor<?x768xf32>) outs(%init : tensor<?x768xf32>) -> tensor<?x768xf32>
    ```
    and the query/key/value projection of its attention with the RMSNorm
    before it:
    ```mlir
    %qkv = attn.gemm none ins(%x, %w : tensor<?x768xf32>, tensor<72x24x32x34xi8>)
        rms_norm(%g : tensor<768xf32>) epsilon(1.0e-05)
        outs(%init : tensor<?x2304xf32>) -> tensor<?x2304xf32>
    ```
  }];
  let arguments = (ins Attn_TensorOrMemRef:$input,
                       Attn_WeightTensorOrMemRef:$weight,
                       Optional<Attn_WeightTensorOrMemRef>:$weight2,
                       Optional<Attn_TensorOrMemRef>:$norm_gamma,
                       Optional<Attn_TensorOrMemRef>:$norm_beta,
                       Optional<Attn_TensorOrMemRef>:$bias,
                       Optional<Attn_TensorOrMemRef>:$bias2,
                       Optional<Attn_TensorOrMemRef>:$row_scale,
                       Optional<Attn_TensorOrMemRef>:$residual,
                       Attn_TensorOrMemRef:$init,
                       Attn_GemmEpilogue:$epilogue,
                       OptionalAttr<F32Attr>:$norm_epsilon,
                       OptionalAttr<F32Attr>:$norm_gain_offset,
                       OptionalAttr<F32Attr>:$alpha,
                       OptionalAttr<F32Attr>:$limit);
  let results = (outs Variadic<RankedTensorOf<[F32]>>:$result);
  let assemblyFormat = [{
    $epilogue `ins` `(` $input `,` $weight (`,` $weight2^)? `:` type($input) `,` type($weight) (`,` type($weight2)^)? `)`
    `` custom<InputNorm>($norm_gamma, type($norm_gamma), $norm_beta, type($norm_beta),
                      $norm_epsilon, $norm_gain_offset)
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`bias2` `(` $bias2^ `:` type($bias2) `)`)?
    (`alpha` `(` $alpha^ `)`)? (`limit` `(` $limit^ `)`)?
    (`row_scale` `(` $row_scale^ `:` type($row_scale) `)`)?
    (`residual` `(` $residual^ `:` type($residual) `)`)?
    `outs` `(` $init `:` type($init) `)` attr-dict (`->` type($result)^)?
  }];
  let extraClassDeclaration = [{
    /// Output features per weight block (NR).
    int64_t getBlockSize() {
      return cast<ShapedType>(getWeight().getType()).getDimSize(2);
    }
    /// Whether the input is normalized first (rms_norm or layer_norm).
    bool hasInputNorm() { return static_cast<bool>(getNormGamma()); }
  }];
  let hasVerifier = 1;
}

def Attn_FlashAttentionOp : Attn_Op<"flash_attention", [
    DeclareOpInterfaceMethods<DestinationStyleOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "blocked online-softmax attention (codegen op)";
  let description = [{
    A code generation op with the semantics of `attn.attention` without a
    bias operand: `query` `[seq_q, heads * head_dim]`, `key` and `value`
    `[kv_len, kv_heads * head_dim]` (every row valid; a cache is sliced to
    its valid prefix first), the result written into `init`. `key` and
    `value` are f32, bf16 or f16 (one type for both), widened on load. With `causal`,
    query `i` sees keys `j <= kv_len - seq_q + i`; `softcap`, `window`,
    `alibi` and `sinks` (`[heads]`) are those of `attn.attention`: a sink
    only joins each row's running max and sum when the row's output is
    normalized, so it costs nothing in the key loop. The kernel starts each block's key
    loop at the window's first key, caps each block of scores in registers
    as it computes them (`c * tanh(s / c)`, then the ALiBi term), so capped
    scores cost no pass of their own.

    `attn-lower-attention` turns it, after bufferization, into a
    FlashAttention-2 style kernel: per KV head and block of query rows (the
    rows of every query head sharing that KV head together, so grouped-query
    attention reads each key and value once per block), a loop over key
    blocks up to the causal diagonal with the running max, running sum and
    output accumulator in registers and stack buffers, vectorized over keys
    for `Q K^T` (keys transposed per block) and over head_dim for `P V`.

    ```mlir
    %o = attn.flash_attention heads(12) kv_heads(4) scale(1.250000e-01) causal
        ins(%q, %k, %v : tensor<?x768xf32>, tensor<?x256xf32>, tensor<?x256xf32>)
        outs(%init : tensor<?x768xf32>) -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Attn_TensorOrMemRef:$query, Attn_CacheTensorOrMemRef:$key,
                       Attn_CacheTensorOrMemRef:$value, Optional<Attn_TensorOrMemRef>:$sinks,
                       Attn_TensorOrMemRef:$init,
                       I64Attr:$heads, I64Attr:$kv_heads, F32Attr:$scale,
                       OptionalAttr<F32Attr>:$softcap,
                       UnitAttr:$causal, OptionalAttr<I64Attr>:$window,
                       OptionalAttr<DenseF32ArrayAttr>:$alibi);
  let results = (outs Variadic<RankedTensorOf<[F32]>>:$result);
  let assemblyFormat = [{
    `heads` `(` $heads `)` `kv_heads` `(` $kv_heads `)` `scale` `(` $scale `)`
    (`softcap` `(` $softcap^ `)`)? (`causal` $causal^)? (`window` `(` $window^ `)`)? (`alibi` `(` $alibi^ `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,` type($value) `)`
    `outs` `(` $init `:` type($init) `)` attr-dict (`->` type($result)^)?
  }];
  let extraClassDeclaration = [{
    int64_t getHeadDim() {
      return cast<ShapedType>(getQuery().getType()).getDimSize(1) /
             static_cast<int64_t>(getHeads());
    }
  }];
  let hasVerifier = 1;
}

#endif // ATTN_OPS_TD
