#!/usr/bin/env python3
"""Regenerates the committed seed corpora of test/fuzz/corpus/ from the test
inputs (the lit tests' IR and configs, the docs' examples) and from small
files written here the way the unit tests write them. Seeds stay small (a few
KB each): libFuzzer mutates them, it does not need real checkpoints.

  test/fuzz/make-seeds.py            # rewrites test/fuzz/corpus/*

Files named regress-* (inputs that once found a bug, kept as regression
tests) are left alone.
"""
import json
import os
import re
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "test", "fuzz", "corpus")


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- safetensors ------------------------------------------------------------

def f32(values):
    return struct.pack("<%df" % len(values), *values)


def f16(values):
    return struct.pack("<%de" % len(values), *values)


def bf16(values):
    return b"".join(struct.pack("<f", v)[2:] for v in values)


def safetensors(tensors, shift=0, metadata=True):
    """tensors: (name, dtype, shape, bytes); data 8-aligned unless shift."""
    header = {"__metadata__": {"format": "pt"}} if metadata else {}
    offset = 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - (8 + len(text)) % 8) % 8 + shift)
    return struct.pack("<Q", len(text)) + text.encode() + b"".join(t[3] for t in tensors)


def mock_values(n, salt):
    return [((i * 7 + salt) % 17 - 8) / 16.0 for i in range(n)]


def mock(encode=f32, dtype="F32", prefix=""):
    return [(prefix + "wte.weight", dtype, [40, 6], encode(mock_values(240, 1))),
            (prefix + "h.0.mix.weight", dtype, [6, 6], encode(mock_values(36, 2))),
            (prefix + "h.0.mix.bias", dtype, [6], encode(mock_values(6, 3))),
            (prefix + "head.bias", dtype, [40], encode(mock_values(40, 4)))]


def safetensors_seeds():
    write("safetensors", "mock-f32", safetensors(mock()))
    write("safetensors", "mock-f16", safetensors(mock(f16, "F16")))
    write("safetensors", "mock-bf16", safetensors(mock(bf16, "BF16")))
    write("safetensors", "mock-prefixed", safetensors(mock(prefix="transformer.")))
    write("safetensors", "mock-misaligned", safetensors(mock(), shift=3))
    extra = mock() + [("h.0.attn.bias", "BOOL", [1, 1, 2, 2], b"\x01" * 4),
                      ("lm_head.weight", "F32", [1], f32([0.0])),
                      ("step", "I64", [], b"\x00" * 8),
                      ("empty", "U8", [0], b"")]
    write("safetensors", "mock-extra", safetensors(extra))
    nan = mock()
    nan[2] = ("h.0.mix.bias", "F32", [6], f32([0, 0, float("nan"), 0, 0, 0]))
    write("safetensors", "mock-nan", safetensors(nan))
    write("safetensors", "dtypes", safetensors(
        [(d, d, [2], b"\x00" * (2 * s)) for d, s in
         [("F64", 8), ("I32", 4), ("U16", 2), ("F8_E4M3", 1), ("F8_E5M2", 1),
          ("I8", 1), ("U64", 8), ("F8_E8M0", 1)]], metadata=False))
    overlap = (b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},'
               b'"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}')
    write("safetensors", "overlap", struct.pack("<Q", len(overlap)) + overlap + b"\x00" * 24)
    write("safetensors", "header-too-long", struct.pack("<Q", 1 << 40) + b"{}")
    write("safetensors", "empty-header", struct.pack("<Q", 2) + b"{}")


# --- GGUF -------------------------------------------------------------------

def gguf_string(text):
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(data)) + data


def gguf(keys, tensors, version=3, alignment=32):
    """keys: (name, type id, encoded value); tensors: (name, ggml type, dims
    in ggml order, bytes), laid out as llama.cpp's writer lays them out."""
    pad = lambda n: (n + alignment - 1) // alignment * alignment
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(keys))
    for name, vtype, value in keys:
        out += gguf_string(name) + struct.pack("<I", vtype) + value
    offset = 0
    for name, gtype, dims, data in tensors:
        out += gguf_string(name) + struct.pack("<I", len(dims))
        out += struct.pack("<%dQ" % len(dims), *dims) + struct.pack("<IQ", gtype, offset)
        offset = pad(offset + len(data))
    out += b"\x00" * (pad(len(out)) - len(out))
    for _, _, _, data in tensors:
        out += data + b"\x00" * (pad(len(data)) - len(data))
    return out


def gguf_seeds():
    u32 = lambda v: struct.pack("<I", v)
    strings = lambda vs: struct.pack("<IQ", 8, len(vs)) + b"".join(gguf_string(v) for v in vs)
    keys = [("general.architecture", 8, gguf_string("llama")),
            ("llama.block_count", 4, u32(1)),
            ("llama.rope.freq_base", 6, struct.pack("<f", 10000.0)),
            ("tokenizer.ggml.add_bos_token", 7, b"\x01"),
            ("tokenizer.ggml.tokens", 9, strings(["<s>", "\u2581the", "<0x0A>"])),
            ("tokenizer.ggml.scores", 9, struct.pack("<IQ3f", 6, 3, 0.0, -1.0, -2.0)),
            ("tokenizer.ggml.token_type", 9, struct.pack("<IQ3i", 5, 3, 3, 1, 6))]
    def blocks(size, count, salt):
        return bytes((i * 37 + salt) & 0xFF for i in range(size * count))
    tensors = [("token_embd.weight", 0, [4, 3], f32([0.5 * i for i in range(12)])),
               ("output_norm.weight", 1, [4], f16([1, 2, 3, 4])),
               ("blk.0.attn_q.weight", 30, [2, 2], bf16([1, -1, 0.5, 2])),
               ("blk.0.q4_0", 2, [32, 2], blocks(18, 2, 1)),
               ("blk.0.q5_0", 6, [32], blocks(22, 1, 2)),
               ("blk.0.q8_0", 8, [32], blocks(34, 1, 3)),
               ("blk.0.q4_k", 12, [256], blocks(144, 1, 4)),
               ("blk.0.q5_k", 13, [256], blocks(176, 1, 5)),
               ("blk.0.q6_k", 14, [256], blocks(210, 1, 6))]
    write("gguf", "llama-types", gguf(keys, tensors))
    write("gguf", "v2-aligned-64", gguf(keys + [("general.alignment", 4, u32(64))],
                                        tensors[:3], version=2, alignment=64))
    write("gguf", "metadata-only", gguf(keys, []))
    write("gguf", "truncated", gguf(keys, tensors)[:300])

    # Tokenizer metadata: SentencePiece (scores, unknown/control/byte/
    # user-defined pieces) and byte-level BPE (merges, a pre-tokenizer name).
    array = lambda vtype, fmt, vs: (struct.pack("<IQ", vtype, len(vs)) +
                                    struct.pack("<%d%s" % (len(vs), fmt), *vs))
    flag = lambda v: bytes([v])
    pieces = ["<unk>", "<s>", "</s>", "<0x21>", "<0x20>", "\u2581", "a", "b", "ab",
              "\u2581ab", "ba", "\u2581\u2581", "caf", "\u00e9"]
    write("gguf", "sentencepiece-tokenizer", gguf([
        ("general.architecture", 8, gguf_string("llama")),
        ("tokenizer.ggml.model", 8, gguf_string("llama")),
        ("tokenizer.ggml.tokens", 9, strings(pieces)),
        ("tokenizer.ggml.scores", 9, array(6, "f", [0, 0, 0, 0, 0, -10, -11, -12, -2, -3,
                                                    -1, -1e9, -5, -13])),
        ("tokenizer.ggml.token_type", 9, array(5, "i", [2, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1,
                                                       1, 4, 1])),
        ("tokenizer.ggml.bos_token_id", 4, u32(1)),
        ("tokenizer.ggml.eos_token_id", 4, u32(2)),
        ("tokenizer.ggml.unknown_token_id", 4, u32(0)),
        ("tokenizer.ggml.add_space_prefix", 7, flag(1)),
        ("tokenizer.ggml.add_eos_token", 7, flag(1))], []))
    write("gguf", "byte-level-tokenizer", gguf([
        ("general.architecture", 8, gguf_string("llama")),
        ("tokenizer.ggml.model", 8, gguf_string("gpt2")),
        ("tokenizer.ggml.pre", 8, gguf_string("llama-bpe")),
        ("tokenizer.ggml.merges", 9, strings(["a b", "\u0120 a"])),
        ("tokenizer.ggml.tokens", 9, strings(["a", "b", "ab", "\u0120", "\u0120a", "<|end|>",
                                              "<tool>"])),
        ("tokenizer.ggml.token_type", 9, array(5, "i", [1, 1, 1, 1, 1, 3, 4])),
        ("tokenizer.ggml.eos_token_id", 4, u32(5))], []))

    # Model metadata read as config.json (GgufConfig): Gemma 3 with its
    # window pattern and local RoPE base, Phi-3 with longrope's tensors.
    f32key = lambda v: struct.pack("<f", v)
    def model_keys(arch, layers):
        return [("general.architecture", 8, gguf_string(arch)),
                (arch + ".block_count", 4, u32(layers)),
                (arch + ".context_length", 4, u32(64)),
                (arch + ".embedding_length", 4, u32(8)),
                (arch + ".feed_forward_length", 4, u32(16)),
                (arch + ".attention.head_count", 4, u32(2)),
                (arch + ".attention.head_count_kv", 4, u32(1)),
                (arch + ".attention.layer_norm_rms_epsilon", 6, f32key(1e-6))]
    embedding = ("token_embd.weight", 0, [8, 3], f32([0.25] * 24))
    write("gguf", "gemma3-model", gguf(model_keys("gemma3", 7) + [
        ("gemma3.attention.sliding_window", 4, u32(4)),
        ("gemma3.attention.sliding_window_pattern", 4, u32(3)),
        ("gemma3.rope.freq_base_swa", 6, f32key(10000.0)),
        ("gemma3.final_logit_softcapping", 6, f32key(30.0))], [embedding]))
    write("gguf", "phi3-longrope-model", gguf(model_keys("phi3", 2) + [
        ("phi3.rope.dimension_count", 4, u32(2)),
        ("phi3.rope.scaling.original_context_length", 4, u32(16)),
        ("phi3.rope.scaling.attn_factor", 6, f32key(1.25)),
        ("phi3.attention.sliding_window", 4, u32(0))],
        [embedding, ("rope_factors_long.weight", 0, [1], f32([4.0])),
         ("rope_factors_short.weight", 0, [1], f32([1.0]))]))


# --- manifests and JSON -----------------------------------------------------

def abi_version():
    text = open(os.path.join(ROOT, "runtime", "include", "attnrt", "model_abi.h")).read()
    return int(re.search(r"#define ATTN_MODEL_ABI_VERSION (\d+)", text).group(1))


MOCK_MANIFEST = """{
  "abi_version": %d,
  "architecture": "mock",
  "vocab_size": 40, "hidden_size": 6, "num_layers": 1,
  "num_heads": 2, "num_kv_heads": 1, "head_dim": 3,
  "intermediate_size": 12, "max_seq": 24,
  "kv_cache": {"bytes": 96},
  "weights": [
    {"name": "wte.weight", "dtype": "F32", "shape": [40, 6]},
    {"name": "h.0.mix.weight", "dtype": "F32", "shape": [6, 6]},
    {"name": "h.0.mix.bias", "dtype": "F32", "shape": [6]},
    {"name": "head.bias", "dtype": "F32", "shape": [40]}
  ],
  "name_prefixes": ["transformer.", "model."],
  "ignored_suffixes": [".attn.bias", ".attn.masked_bias"],
  "ignored_names": ["lm_head.weight"]
}
""" % abi_version()


def manifest_seeds():
    write("manifest", "mock", MOCK_MANIFEST)
    # What attn-compile embeds for a 1-layer GPT-2 (shape of the real thing).
    packed = json.loads(MOCK_MANIFEST)
    packed["weights"][1]["used_at_run_time"] = False
    packed["packed"] = [{"name": "h.0.mix", "bytes": 144, "sources": [1]}]
    write("manifest", "mock-packed", json.dumps(packed))
    gpt2 = {"abi_version": abi_version(), "architecture": "gpt2", "vocab_size": 97,
            "hidden_size": 16, "num_layers": 1, "num_heads": 2, "num_kv_heads": 2,
            "head_dim": 8, "intermediate_size": 64, "max_seq": 32,
            "kv_cache": {"bytes": 4096},
            "weights": [{"name": n, "dtype": "F32", "shape": s} for n, s in [
                ("wte.weight", [97, 16]), ("wpe.weight", [32, 16]),
                ("h.0.ln_1.weight", [16]), ("h.0.attn.c_attn.weight", [16, 48]),
                ("ln_f.weight", [16]), ("ln_f.bias", [16])]],
            "name_prefixes": ["transformer."],
            "ignored_suffixes": [".attn.bias", ".attn.masked_bias", "lm_head.weight"]}
    write("manifest", "gpt2", json.dumps(gpt2))
    write("manifest", "escapes", '{"s": "a\\u00e9\\ud83d\\ude00\\n\\t\\"", "n": -0.5e-3, '
          '"i": 9223372036854775807, "big": 1e400, "l": [true, false, null, {}, []]}')
    write("manifest", "nested", "[" * 60 + "]" * 60)
    write("manifest", "utf8", b'{"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80": 1}')


# --- config.json --------------------------------------------------------------

def config_seeds():
    llama = {"architectures": ["LlamaForCausalLM"], "attention_bias": False,
             "hidden_act": "silu", "hidden_size": 64, "intermediate_size": 172,
             "max_position_embeddings": 64, "mlp_bias": False, "model_type": "llama",
             "num_attention_heads": 4, "num_hidden_layers": 2,
             "num_key_value_heads": 2, "rms_norm_eps": 1e-05, "rope_scaling": None,
             "rope_theta": 10000.0, "tie_word_embeddings": False,
             "torch_dtype": "float32", "vocab_size": 101}
    gpt2 = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
            "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_embd": 32,
            "n_head": 4, "n_inner": None, "n_layer": 2, "n_positions": 64,
            "scale_attn_weights": True, "vocab_size": 97}
    write("model-config", "tiny-llama.json", json.dumps(llama, indent=2))
    write("model-config", "tiny-gpt2.json", json.dumps(gpt2, indent=2))
    write("model-config", "llama-head-dim.json", json.dumps(
        dict(llama, head_dim=32, num_key_value_heads=1, tie_word_embeddings=True)))
    write("model-config", "gpt2-erf.json", json.dumps(
        dict(gpt2, activation_function="gelu", n_inner=48)))
    # The hand-broken configs of the lit suite.
    path = os.path.join(ROOT, "test", "Compiler", "config-errors.test")
    text = open(path).read()
    for name, body in re.findall(r"^#--- (\S+)\n(.*?)(?=^#--- |\Z)", text, re.M | re.S):
        write("model-config", "lit-" + name, body)


# --- .npy ---------------------------------------------------------------------

def npy(shape, values, version=1, descr="<f4", fortran=False, pad=True):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False", dims)
    prefix = 10 if version == 1 else 12
    if pad:
        header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64)
    header += "\n"
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode() + f32(values)


def npy_seeds():
    write("npy", "2x3", npy([2, 3], [1, 2, 3, 4, 5, 6]))
    write("npy", "1d", npy([4], [0.5, -1, 3e38, -0.0]))
    write("npy", "scalar", npy([], [7]))
    write("npy", "empty", npy([0, 5], []))
    write("npy", "v2", npy([2], [1, 2], version=2))
    write("npy", "v3-unpadded", npy([1, 1, 2], [1, 2], version=3, pad=False))
    write("npy", "fortran", npy([2, 2], [1, 2, 3, 4], fortran=True))
    write("npy", "f8", npy([1], [0, 0], descr="<f8"))


# --- session programs -----------------------------------------------------------

def session_seeds():
    # Opcode = byte % 8: 0 prefill, 1 decode, 2 reset, 3 sampler, 4 sample,
    # 5 generate, 6 new session, 7 null arguments (see SessionFuzzer.cpp).
    prefill5 = bytes([0, 5, 1, 3, 1, 4, 1, 5])
    write("session", "prefill-decode", prefill5 + bytes([1, 7, 1, 9, 1, 39]))
    write("session", "prefill-bad-token", bytes([0, 3, 0, 1, 42, 2]))
    write("session", "fill-context", bytes([0, 20, 1]) + bytes(range(1, 21)) + bytes([1, 2] * 5))
    sampler = bytes([3, 4, 10, 2, 1, 2, 3, 4, 5, 6, 7, 8, 42])
    write("session", "generate", sampler + bytes([5, 3, 4, 1, 2, 3]) + bytes([2, 5, 2, 30, 9, 9]))
    write("session", "sample-special", sampler + bytes([4, 12, 8, 9, 10, 20, 21, 0, 1, 2, 3, 22, 23, 24]))
    write("session", "greedy", bytes([3, 0, 2, 2] + [0] * 8 + [40, 4, 6, 1, 2, 3, 2, 8, 9]))
    write("session", "nulls-reset", bytes([7, 2, 6, 0, 1, 0, 5, 7]))


# --- attn IR ------------------------------------------------------------------

CODEGEN_OPS = {
    "gemm-residual.mlir": """func.func @gemm(%h: tensor<?x64xf32>, %w: tensor<2x64x32xf32>, %x: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = attn.gemm none ins(%h, %w : tensor<?x64xf32>, tensor<2x64x32xf32>) residual(%x : tensor<?x64xf32>) outs(%init : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
""",
    "gemm-swiglu.mlir": """func.func @gemm_swiglu(%h: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %w2: tensor<3x64x32xf32>, %b: tensor<96xf32>, %s: tensor<4xf32>, %init: tensor<4x96xf32>) -> tensor<4x96xf32> {
  %y = attn.gemm swiglu ins(%h, %w, %w2 : tensor<4x64xf32>, tensor<3x64x32xf32>, tensor<3x64x32xf32>) bias(%b : tensor<96xf32>) row_scale(%s : tensor<4xf32>) outs(%init : tensor<4x96xf32>) -> tensor<4x96xf32>
  return %y : tensor<4x96xf32>
}
""",
    "gemm-memref.mlir": """func.func @gemm_memref(%h: memref<4x64xf32>, %w: memref<2x64x32xf32>, %init: memref<4x64xf32>) {
  attn.gemm gelu_tanh ins(%h, %w : memref<4x64xf32>, memref<2x64x32xf32>) outs(%init : memref<4x64xf32>)
  return
}
""",
    "linear-packed.mlir": """func.func @packed_linear(%x: tensor<?x64xf32>, %w: tensor<4x64x32xf32>) -> tensor<?x128xf32> {
  %0 = attn.linear %x, %w layout(packed) : tensor<?x64xf32>, tensor<4x64x32xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}
""",
}


def attn_opt_seeds():
    # The code generation ops (attn.gemm, packed weights).
    for name, text in CODEGEN_OPS.items():
        write("attn-opt", name, text)
    for name in sorted(os.listdir(os.path.join(ROOT, "docs", "examples", "ops"))):
        write("attn-opt", "doc-" + name,
              open(os.path.join(ROOT, "docs", "examples", "ops", name)).read())
    write("attn-opt", "decoder-block.mlir",
          open(os.path.join(ROOT, "docs", "examples", "decoder-block.mlir")).read())
    for test in ["ops.mlir", "canonicalize.mlir", "invalid.mlir", "malformed.mlir"]:
        text = open(os.path.join(ROOT, "test", "Dialect", "Attn", test)).read()
        for i, chunk in enumerate(text.split("// -----")):
            if test == "invalid.mlir" and i % 3:
                continue  # A third of the verifier cases is plenty.
            body = "\n".join(l for l in chunk.splitlines()
                             if not l.lstrip().startswith("//")).strip()
            if "func.func" in body and len(body) < 4096:
                write("attn-opt", "%s-%02d.mlir" % (test[:-5], i), body + "\n")


# --- tokenizers --------------------------------------------------------------

def byte_level_chars():
    """GPT-2's bytes_to_unicode."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, n = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


def added(i, content, special=True, **options):
    token = {"id": i, "content": content, "single_word": False, "lstrip": False,
             "rstrip": False, "normalized": False, "special": special}
    token.update(options)
    return token


def tokenizer(model, added_tokens=(), normalizer=None, pre=None, post=None, decoder=None):
    return json.dumps({"version": "1.0", "truncation": None, "padding": None,
                       "added_tokens": list(added_tokens), "normalizer": normalizer,
                       "pre_tokenizer": pre, "post_processor": post, "decoder": decoder,
                       "model": model}, ensure_ascii=False)


def tokenizer_json_seeds():
    chars = byte_level_chars()
    # A byte-level BPE over the printable ASCII bytes, a few merges.
    vocab = {chars[b]: i for i, b in enumerate(range(32, 127))}
    merges = ["\u0120 t", "h e", "\u0120t he", "i n"]
    for m in merges:
        a, b = m.split(" ")
        vocab.setdefault(a + b, len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    model = {"type": "BPE", "dropout": None, "unk_token": None, "vocab": vocab, "merges": merges}
    eot = [added(vocab["<|endoftext|>"], "<|endoftext|>", normalized=True)]
    write("tokenizer-json", "byte-level", tokenizer(
        model, eot, pre={"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        post={"type": "ByteLevel"}, decoder={"type": "ByteLevel"}))
    split = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}| ?\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}
    model_pairs = dict(model, merges=[m.split(" ") for m in merges], ignore_merges=True)
    write("tokenizer-json", "split-sequence", tokenizer(
        model_pairs, eot, pre=split, decoder={"type": "ByteLevel"},
        post={"type": "Sequence", "processors": [{"type": "ByteLevel"}, {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [vocab["<|endoftext|>"]],
                                                 "tokens": ["<|endoftext|>"]}}}]}))
    # SentencePiece style: byte fallback, Prepend/Replace, the LLaMA decoder.
    sp = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        sp["<0x%02X>" % b] = 3 + b
    for w in ["\u2581", "a", "b", "t", "h", "e", "\u2581t", "he", "\u2581the"]:
        sp[w] = len(sp)
    sp_model = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "byte_fallback": True,
                "fuse_unk": True, "vocab": sp, "merges": ["\u2581 t", "h e", "\u2581t he"]}
    write("tokenizer-json", "sentencepiece", tokenizer(
        sp_model, [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
        normalizer={"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        post={"type": "TemplateProcessing",
              "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
              "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        decoder={"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}))
    write("tokenizer-json", "metaspace", tokenizer(
        sp_model, [added(1, "<s>", lstrip=True, rstrip=True), added(2, "</s>", single_word=True)],
        pre={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True},
        decoder={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}))


def tokenizer_text_seeds():
    # Byte 0 selects the tokenizer and flags (TokenizerTextFuzzer.cpp).
    for mode, name in [(7, "gpt2-special"), (1, "gpt2-plain"), (6, "sp-special"), (0, "sp-plain")]:
        write("tokenizer-text", name, bytes([mode]) + "The theme: it's 2 t\u00e9 <|endoftext|><s>  \u4f60\U0001f642\n".encode())
    write("tokenizer-text", "invalid-utf8", bytes([1]) + b"ok \xc3( \xe2\x82")


# --- chat templates -----------------------------------------------------------

CHATML = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
          "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
          "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
LLAMA2 = ("{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
          "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
          "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
          "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
          "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
          "{% endif %}{% if loop.index0 == 0 and system_message != false %}"
          "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
          "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
          "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
          "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}")
ZEPHYR = ("{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
          "{{ '<|user|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n"
          "{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n"
          "{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
          "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}")
FEATURES = ("{%- macro render(m, prefix='>') -%}{{ prefix }}{{ m.role | upper }}: {{ m.content | trim }}"
            "{%- endmacro -%}\n{%- set ns = namespace(n=0, last=none) -%}\n"
            "{%- for m in messages if m.role != 'tool' -%}\n  {%- set ns.n = ns.n + 1 -%}\n"
            "  {{ render(m) }}{{ '\\n' if not loop.last else '' }}\n"
            "  {%- if '</think>' in m.content %}{{ m.content.split('</think>')[-1].lstrip() }}{% endif -%}\n"
            "{%- else -%}none{%- endfor -%}\n"
            "{# counts #}{{ ns.n }} {{ messages | map(attribute='role') | join(',') }} "
            "{{ messages[::-1][0].content[:3] }} {{ {'k': [1, 2.5, none, true]} | tojson(indent=1) }}\n"
            "{%- if add_generation_prompt is defined and add_generation_prompt %}<go>{% endif %}")


def chat(flags, template, *turns):
    """Byte 0 = flags (bit 0: add_generation_prompt), then NUL-separated
    template, role, content, role, content... (ChatTemplateFuzzer.cpp)."""
    data = bytes([flags]) + template.encode()
    for role, content in turns:
        data += b"\0" + role.encode() + b"\0" + content.encode()
    return data


def chat_template_seeds():
    conversation = [("system", "Be brief."), ("user", "Hi \u00e9\U0001f642"),
                    ("assistant", " Hello! </think>ok "), ("user", "{{ not a tag }}")]
    write("chat-template", "chatml", chat(1, CHATML, *conversation))
    write("chat-template", "llama2", chat(0, LLAMA2, *conversation))
    write("chat-template", "llama2-rejected", chat(1, LLAMA2, ("user", "a"), ("user", "b")))
    write("chat-template", "zephyr", chat(1, ZEPHYR, *conversation))
    write("chat-template", "features", chat(1, FEATURES, *conversation, ("tool", "x")))
    write("chat-template", "whitespace", chat(0, "a  \n  {% if true %}\n    b\n  {% endif %}\n"
                                            "{%- for x in [1, 2] -%} {{ x }} {%+ if x %}+{% endif +%}\n"
                                            "{%- endfor %}\r\n{{- ' c ' -}}  \n"))


def serve_request_seeds():
    """Request bodies of attn-serve's endpoints (ServeRequestFuzzer.cpp runs
    each through every parser)."""
    bodies = {
        "completion": {"model": "m", "prompt": "Once upon a time", "max_tokens": 16,
                       "temperature": 0.7, "top_p": 0.9, "top_k": 40, "seed": 42,
                       "stop": ["\n", "The"], "stream": True,
                       "stream_options": {"include_usage": True}},
        "completion-tokens": {"prompt": [[1, 2, 3]], "max_tokens": 1.0, "echo": True, "n": 1,
                              "logprobs": None, "best_of": 1, "suffix": "", "logit_bias": {},
                              "presence_penalty": 0},
        "chat": {"messages": [{"role": "system", "content": "Be brief."},
                              {"role": "user", "content": [{"type": "text", "text": "Hi"},
                                                           {"type": "text", "text": "there"}]},
                              {"role": "assistant", "content": None}],
                 "max_completion_tokens": 8, "tool_choice": "none",
                 "response_format": {"type": "text"}, "stop": "\u00e9"},
        "tokenize": {"content": "Hello <s> world", "add_special": True, "parse_special": False,
                     "tokens": [1, 15043, 2147483647]},
        "errors": {"prompt": "x", "max_tokens": "5", "temperature": 2.5, "n": 2,
                   "seed": -9223372036854775808, "extra": [[[[{"a": None}]]]]},
    }
    for name, body in bodies.items():
        write("serve-request", name, json.dumps(body, separators=(",", ":")))


def main():
    # Reproducers of past findings (regress-*) stay: they are regression
    # tests, not generated seeds.
    for target in os.listdir(OUT) if os.path.isdir(OUT) else []:
        for name in os.listdir(os.path.join(OUT, target)):
            if not name.startswith("regress-"):
                os.remove(os.path.join(OUT, target, name))
    safetensors_seeds()
    gguf_seeds()
    manifest_seeds()
    config_seeds()
    npy_seeds()
    session_seeds()
    attn_opt_seeds()
    tokenizer_json_seeds()
    tokenizer_text_seeds()
    chat_template_seeds()
    serve_request_seeds()
    for target in sorted(os.listdir(OUT)):
        files = os.listdir(os.path.join(OUT, target))
        size = sum(os.path.getsize(os.path.join(OUT, target, f)) for f in files)
        print("%-14s %3d seeds, %6d bytes" % (target, len(files), size))


if __name__ == "__main__":
    sys.exit(main())
