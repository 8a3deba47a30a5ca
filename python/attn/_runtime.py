"""libattnrt through ctypes: finding the library and declaring its C API
(runtime/include/attnrt/attnrt.h)."""

import ctypes
import os

_ERROR_SIZE = 1024


class _LoadOptions(ctypes.Structure):
    _fields_ = [
        ("context", ctypes.c_int64),
        ("compiler", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
        ("log", ctypes.c_void_p),
        ("log_user", ctypes.c_void_p),
        ("weight_format", ctypes.c_char_p),
        ("kv_format", ctypes.c_char_p),
        ("inspect", ctypes.c_int),
        ("head_format", ctypes.c_char_p),
    ]


class _ModelInfo(ctypes.Structure):
    _fields_ = [
        ("architecture", ctypes.c_char_p),
        ("vocab_size", ctypes.c_int64),
        ("hidden_size", ctypes.c_int64),
        ("num_layers", ctypes.c_int64),
        ("num_heads", ctypes.c_int64),
        ("num_kv_heads", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("intermediate_size", ctypes.c_int64),
        ("max_seq", ctypes.c_int64),
        ("kv_cache_bytes", ctypes.c_int64),
        ("num_weights", ctypes.c_int64),
        ("weight_format", ctypes.c_char_p),
        ("kv_format", ctypes.c_char_p),
        ("attn_version", ctypes.c_char_p),
        ("can_inspect", ctypes.c_int32),
        ("tensor_parallel", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("num_experts", ctypes.c_int64),
        ("experts_per_token", ctypes.c_int64),
    ]


class _SamplerParams(ctypes.Structure):
    _fields_ = [
        ("temperature", ctypes.c_float),
        ("top_k", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("seed", ctypes.c_uint64),
    ]


def _candidates():
    """Where libattnrt may be: $ATTN_LIBATTNRT, the build tree this package
    was copied into by the build (attn/_build.py), the library installed
    beside this package's prefix, then the dynamic loader's search."""
    if os.environ.get("ATTN_LIBATTNRT"):
        yield os.environ["ATTN_LIBATTNRT"]
    try:
        from . import _build  # written by the build into build/python/attn
        yield _build.LIBATTNRT
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    for up in (3, 4, 5):  # <prefix>/lib/python3/dist-packages/attn, ...
        prefix = os.path.normpath(os.path.join(here, *([".."] * up)))
        for libdir in ("lib", "lib64", "lib/x86_64-linux-gnu"):
            yield os.path.join(prefix, libdir, "libattnrt.so.0")
    yield "libattnrt.so.0"


def load():
    errors = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as error:
            errors.append(str(error))
    else:
        raise OSError("cannot load libattnrt (set ATTN_LIBATTNRT to its path): "
                      + "; ".join(errors or ["libattnrt.so.0 not found"]))
    _declare(lib)
    return lib


def _declare(lib):
    c = ctypes
    p, i32, i64, cp, sz = c.c_void_p, c.c_int32, c.c_int64, c.c_char_p, c.c_size_t
    f32p, i32p = c.POINTER(c.c_float), c.POINTER(c.c_int32)
    signatures = {
        "attnrt_version": (cp, []),
        "attnrt_load_default_options": (_LoadOptions, []),
        "attnrt_model_load_dir": (p, [cp, c.POINTER(_LoadOptions), cp, sz]),
        "attnrt_model_load": (p, [cp, cp, cp, sz]),
        "attnrt_model_free": (None, [p]),
        "attnrt_model_get_info": (c.POINTER(_ModelInfo), [p]),
        "attnrt_model_library_path": (cp, [p]),
        "attnrt_model_set_num_threads": (c.c_int, [p, i32]),
        "attnrt_session_create": (p, [p, cp, sz]),
        "attnrt_session_free": (None, [p]),
        "attnrt_session_reset": (None, [p]),
        "attnrt_prefill": (c.c_int, [p, i32p, i64, f32p, c.c_int, cp, sz]),
        "attnrt_decode": (c.c_int, [p, i32, f32p, cp, sz]),
        "attnrt_inspect_routing": (c.c_int, [p, i32p, i64, f32p, f32p, f32p, f32p, i32p, f32p,
                                             cp, sz]),
        "attnrt_unembed": (c.c_int, [p, f32p, i64, f32p, cp, sz]),
        "attnrt_sampler_create": (p, [c.POINTER(_SamplerParams), i64, cp, sz]),
        "attnrt_sampler_free": (None, [p]),
        "attnrt_sample": (i32, [p, f32p, i64]),
        "attnrt_tokenizer_load": (p, [cp, cp, sz]),
        "attnrt_tokenizer_free": (None, [p]),
        "attnrt_tokenize": (c.c_int, [p, cp, sz, c.c_int, i32p, i64, c.POINTER(i64), cp, sz]),
        "attnrt_detokenize": (c.c_int, [p, i32p, i64, c.c_int, cp, sz, c.POINTER(sz), cp, sz]),
        "attnrt_tokenizer_is_eos": (c.c_int, [p, i32]),
        "attnrt_detokenizer_create": (p, [p, c.c_int, cp, sz]),
        "attnrt_detokenizer_free": (None, [p]),
        "attnrt_detokenizer_step": (c.c_void_p, [p, i32, c.POINTER(sz), cp, sz]),
        "attnrt_detokenizer_flush": (c.c_void_p, [p, c.POINTER(sz), cp, sz]),
        "attnrt_chat_template_load": (p, [cp, cp, sz]),
        "attnrt_chat_template_parse": (p, [cp, cp, cp, cp, sz]),
        "attnrt_chat_template_free": (None, [p]),
        "attnrt_chat_template_apply_json": (c.c_int, [p, cp, cp, cp, sz, c.POINTER(sz), cp, sz]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes


def error_buffer():
    return ctypes.create_string_buffer(_ERROR_SIZE), _ERROR_SIZE
