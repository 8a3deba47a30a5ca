"""attn.Model: one compiled model, its tokenizer and a session."""

import collections
import ctypes
import math
import os

import numpy as np

from . import _runtime
from ._chat import ChatTemplate

_ADD_SPECIAL = 1
_PARSE_SPECIAL = 2
_lib = None


def _runtime_lib():
    global _lib
    if _lib is None:
        _lib = _runtime.load()
    return _lib


class Error(RuntimeError):
    """An error the Attn runtime reported; the message is the runtime's."""


Inspection = collections.namedtuple(
    "Inspection", "attention residual final_norm logits experts expert_weights",
    defaults=(None, None))
Inspection.__doc__ = """What one run over a prompt computes on the way (Model.inspect):
attention [layers, heads, T, T], residual [layers + 1, T, hidden] (the first
layer's input, then each layer's output), final_norm [T, hidden] and logits
[T, vocab_size], all float32; for a mixture of experts, experts (int32) and
expert_weights (float32) [layers, T, experts_per_token]: the experts each
layer's router chose for each token, best first, and their weights (-1 and 0
in a dense layer); None for other models."""


def version():
    """The version of the libattnrt this package runs on, e.g. "0.2.0"."""
    return _runtime_lib().attnrt_version().decode()


def _raise_if(failed, buffer):
    if failed:
        raise Error(buffer.value.decode("utf-8", errors="replace"))


def _optional(text):
    return None if text is None else str(text).encode()


class Model:
    """A model compiled by attn-compile, loaded by libattnrt.

    Model(folder) loads a Hugging Face model folder (config.json, weights,
    tokenizer.json), compiling it on first use and caching the library as
    `attn-run MODEL_DIR` does; context, weight_format ("f32", "bf16", "q8_0",
    "q4_0"), head_format (the output projection's, when not weight_format's)
    and kv_format ("f32", "bf16", "f16") choose how. Model(library,
    weights) loads a library made by attn-compile and its .safetensors (the
    tokenizer, if any, from the weights' folder). A Model is not thread-safe:
    give each thread its own.
    """

    def __init__(self, path, weights=None, *, context=0, weight_format=None,
                 kv_format=None, threads=None, cache_dir=None, inspect=False,
                 head_format=None):
        lib = _runtime_lib()
        self._model = self._session = self._tokenizer = self._inspector = None
        self._chat_template = None
        error, size = _runtime.error_buffer()
        path = os.fspath(path)
        if weights is None:
            options = lib.attnrt_load_default_options()
            if not isinstance(context, int) or isinstance(context, bool):
                raise TypeError(f"context must be an int, got {type(context).__name__}")
            options.context = context
            options.weight_format = _optional(weight_format)
            options.head_format = _optional(head_format)
            options.kv_format = _optional(kv_format)
            options.cache_dir = _optional(cache_dir)
            options.inspect = int(bool(inspect))
            # What a second library with the inspection entry points needs.
            self._folder_options = dict(context=context, weight_format=weight_format,
                                        head_format=head_format,
                                        kv_format=kv_format, threads=threads,
                                        cache_dir=cache_dir, inspect=True)
            self._model = lib.attnrt_model_load_dir(path.encode(), ctypes.byref(options),
                                                    error, size)
            self._tokenizer_dir = path
        else:
            if context or weight_format or head_format or kv_format or inspect:
                raise ValueError("context, weight_format, head_format, kv_format and inspect "
                                 "are compiled into a library: give a model folder to choose "
                                 "them")
            self._folder_options = None
            weights = os.fspath(weights)
            self._model = lib.attnrt_model_load(path.encode(), weights.encode(), error, size)
            self._tokenizer_dir = os.path.dirname(os.path.abspath(weights))
        _raise_if(not self._model, error)
        info = lib.attnrt_model_get_info(self._model).contents
        self.vocab_size = info.vocab_size
        self.max_seq = info.max_seq
        self.architecture = info.architecture.decode()
        self.weight_format = info.weight_format.decode()
        self.kv_format = info.kv_format.decode()
        self.num_layers, self.num_heads = info.num_layers, info.num_heads
        self.hidden_size = info.hidden_size
        self.can_inspect = bool(info.can_inspect)
        # A mixture of experts: experts_per_token of num_experts (0 and 0: dense).
        self.num_experts, self.experts_per_token = info.num_experts, info.experts_per_token
        self._path = path
        self.library_path = lib.attnrt_model_library_path(self._model).decode()
        if threads is not None:
            lib.attnrt_model_set_num_threads(self._model, int(threads))
        self._session = lib.attnrt_session_create(self._model, error, size)
        _raise_if(not self._session, error)

    # -- lifetime -------------------------------------------------------------

    def close(self):
        """Frees the session, the tokenizer and the model (also at exit)."""
        lib = _lib
        if lib is None:
            return
        if self._inspector:
            self._inspector.close()
            self._inspector = None
        if self._session:
            lib.attnrt_session_free(self._session)
        if self._tokenizer:
            lib.attnrt_tokenizer_free(self._tokenizer)
        if self._model:
            lib.attnrt_model_free(self._model)
        self._model = self._session = self._tokenizer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _live(self):
        if not self._model:
            raise Error("the model is closed")

    # -- tokens -----------------------------------------------------------------

    def _tokenizer_handle(self):
        self._live()
        if not self._tokenizer:
            error, size = _runtime.error_buffer()
            self._tokenizer = _lib.attnrt_tokenizer_load(self._tokenizer_dir.encode(),
                                                         error, size)
            _raise_if(not self._tokenizer, error)
        return self._tokenizer

    def apply_chat_template(self, messages, tools=None, documents=None,
                            add_generation_prompt=False, **kwargs):
        """The prompt of a conversation through the model folder's chat
        template (ChatTemplate.apply_chat_template; loaded on first use from
        the folder of the tokenizer), as transformers'
        tokenizer.apply_chat_template(..., tokenize=False)."""
        self._live()
        if self._chat_template is None:
            self._chat_template = ChatTemplate(self._tokenizer_dir)
        return self._chat_template.apply_chat_template(
            messages, tools=tools, documents=documents,
            add_generation_prompt=add_generation_prompt, **kwargs)

    def tokenize(self, text, add_special_tokens=True):
        """The ids of `text`, as Hugging Face's tokenizer(text) gives them
        (special tokens written in the text are matched; BOS/EOS added unless
        add_special_tokens=False)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        data = text.encode("utf-8")
        flags = _PARSE_SPECIAL | (_ADD_SPECIAL if add_special_tokens else 0)
        tokenizer = self._tokenizer_handle()
        error, size = _runtime.error_buffer()
        count = ctypes.c_int64(0)
        rc = _lib.attnrt_tokenize(tokenizer, data, len(data), flags, None, 0,
                                  ctypes.byref(count), error, size)
        _raise_if(rc != 0, error)
        ids = (ctypes.c_int32 * max(count.value, 1))()
        rc = _lib.attnrt_tokenize(tokenizer, data, len(data), flags, ids, count.value,
                                  ctypes.byref(count), error, size)
        _raise_if(rc != 0, error)
        return list(ids[:count.value])

    def detokenize(self, ids, skip_special_tokens=False):
        """The text of `ids`, as Hugging Face's decode."""
        ids = self._ids(ids, allow_empty=True)
        tokenizer = self._tokenizer_handle()
        error, size = _runtime.error_buffer()
        length = ctypes.c_size_t(0)
        pointer = ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        rc = _lib.attnrt_detokenize(tokenizer, pointer, len(ids), int(skip_special_tokens),
                                    None, 0, ctypes.byref(length), error, size)
        _raise_if(rc != 0, error)
        text = ctypes.create_string_buffer(length.value + 1)
        rc = _lib.attnrt_detokenize(tokenizer, pointer, len(ids), int(skip_special_tokens),
                                    text, length.value + 1, ctypes.byref(length), error, size)
        _raise_if(rc != 0, error)
        return text.raw[:length.value].decode("utf-8")

    def _ids(self, ids, allow_empty=False):
        """`ids` as a C-contiguous int32 array; bad types and values out of
        int32 are errors naming the position (the runtime checks the range
        against the vocabulary)."""
        if isinstance(ids, (str, bytes)):
            raise TypeError("ids must be a sequence of ints, not text (see tokenize)")
        array = np.asarray(ids)
        if array.ndim != 1:
            raise ValueError(f"ids must be one-dimensional, got shape {array.shape}")
        if array.size == 0:
            if allow_empty:
                return np.zeros(0, dtype=np.int32)
            raise ValueError("ids must not be empty")
        if array.dtype.kind not in "iu":
            raise TypeError(f"ids must be ints, got {array.dtype} values")
        low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
        bad = np.nonzero((array < low) | (array > high))[0]
        if bad.size:
            raise ValueError(f"id {int(array[bad[0]])} at position {int(bad[0])} does "
                             "not fit int32")
        return np.ascontiguousarray(array, dtype=np.int32)

    # -- logits ------------------------------------------------------------------

    def _prefill(self, ids, all_logits):
        rows = len(ids) if all_logits else 1
        logits = np.empty((rows, self.vocab_size), dtype=np.float32)
        error, size = _runtime.error_buffer()
        _lib.attnrt_session_reset(self._session)  # every call starts at position 0
        rc = _lib.attnrt_prefill(self._session, ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                                 len(ids), logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                 int(all_logits), error, size)
        _raise_if(rc != 0, error)
        return logits

    def logits(self, ids):
        """The logits of every position of `ids` (from position 0, one
        prefill): a float32 array [len(ids), vocab_size]."""
        self._live()
        return self._prefill(self._ids(ids), all_logits=True)

    # -- inspection ----------------------------------------------------------------

    def _inspecting(self):
        """The model that runs inspections: this one when its library has the
        entry points, else (for a model folder) the same folder compiled
        with them, once, on first use."""
        self._live()
        if self.can_inspect:
            return self
        if self._inspector is None:
            if self._folder_options is None:
                raise Error(f"the library {self.library_path} has no inspection entry "
                            "points: compile it with attn-compile --inspect")
            self._inspector = Model(self._path, **self._folder_options)
        return self._inspector

    def inspect(self, ids):
        """One run over `ids` from position 0 that keeps what the model
        computes on the way: an Inspection of numpy arrays. attention[l, h, i]
        are the softmax weights query i gives keys 0..T-1 (0 after i and
        outside a sliding window), from the q and k the model uses."""
        model = self._inspecting()
        ids = self._ids(ids)
        n = len(ids)
        routing = (model.num_layers, n, model.experts_per_token)
        routed = model.experts_per_token > 0
        out = Inspection(
            np.empty((model.num_layers, model.num_heads, n, n), dtype=np.float32),
            np.empty((model.num_layers + 1, n, model.hidden_size), dtype=np.float32),
            np.empty((n, model.hidden_size), dtype=np.float32),
            np.empty((n, model.vocab_size), dtype=np.float32),
            np.empty(routing, dtype=np.int32) if routed else None,
            np.empty(routing, dtype=np.float32) if routed else None)
        floats = [a.ctypes.data_as(ctypes.POINTER(ctypes.c_float)) for a in out[:4]]
        experts = (out.experts.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
                   if routed else None)
        weights = (out.expert_weights.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
                   if routed else None)
        error, size = _runtime.error_buffer()
        rc = _lib.attnrt_inspect_routing(model._session,
                                         ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), n,
                                         *floats, experts, weights, error, size)
        _raise_if(rc != 0, error)
        return out

    def attention(self, ids):
        """Every layer's and head's attention weights over `ids`: float32
        [layers, heads, T, T] (Model.inspect's attention)."""
        return self.inspect(ids).attention

    def routing(self, ids):
        """A mixture of experts' routing of `ids`: (experts, expert_weights),
        int32 and float32 [layers, T, experts_per_token], the experts each
        layer's router chose for each token, best first, and their weights
        (-1 and 0 in a dense layer). Model.inspect's experts and
        expert_weights."""
        if self.experts_per_token == 0:
            raise Error(f"the model ({self.architecture}) is not a mixture of experts: "
                        "it has no routing")
        seen = self.inspect(ids)
        return seen.experts, seen.expert_weights

    def unembed(self, hidden):
        """The logit lens: hidden states [T, hidden_size] (e.g. a row of
        inspect(ids).residual) through the final norm and the output head:
        float32 logits [T, vocab_size]."""
        model = self._inspecting()
        array = np.asarray(hidden)
        if array.ndim != 2 or array.shape[1] != model.hidden_size or array.shape[0] < 1:
            raise ValueError(f"hidden must be [T, {model.hidden_size}] with T >= 1, got "
                             f"shape {array.shape}")
        array = np.ascontiguousarray(array, dtype=np.float32)
        logits = np.empty((array.shape[0], model.vocab_size), dtype=np.float32)
        error, size = _runtime.error_buffer()
        rc = _lib.attnrt_unembed(model._session,
                                 array.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                 array.shape[0],
                                 logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                 error, size)
        _raise_if(rc != 0, error)
        return logits

    # -- generation ---------------------------------------------------------------

    def generate(self, text, max_tokens=64, temperature=0.0, top_k=0, top_p=1.0,
                 seed=0, stream=False):
        """Continues `text` by up to `max_tokens` tokens, stopping at the end
        of sequence token: the continuation as one string, or with stream=True
        a generator of its pieces as they come (a character split across
        tokens appears whole). temperature 0 is greedy; sampling is the
        runtime's (the same seed draws the same tokens as attn-run)."""
        pieces = self._pieces(text, max_tokens, temperature, top_k, top_p, seed)
        return pieces if stream else "".join(pieces)

    def _pieces(self, text, max_tokens, temperature, top_k, top_p, seed):
        if not isinstance(max_tokens, int) or max_tokens < 0:
            raise ValueError(f"max_tokens must be an int >= 0, got {max_tokens!r}")
        prompt = self._ids(self.tokenize(text))
        if len(prompt) + max_tokens > self.max_seq:
            raise Error(f"a prompt of {len(prompt)} tokens plus {max_tokens} generated "
                        f"exceeds the context of {self.max_seq} positions")
        params = _runtime._SamplerParams(float(temperature), int(top_k), float(top_p),
                                         int(seed))
        error, size = _runtime.error_buffer()
        sampler = _lib.attnrt_sampler_create(ctypes.byref(params), self.vocab_size,
                                             error, size)
        _raise_if(not sampler, error)
        stream = _lib.attnrt_detokenizer_create(self._tokenizer_handle(), 1, error, size)
        if not stream:
            _lib.attnrt_sampler_free(sampler)
            _raise_if(True, error)
        return self._stream(prompt, max_tokens, sampler, stream)

    def _stream(self, prompt, max_tokens, sampler, stream):
        error, size = _runtime.error_buffer()
        length = ctypes.c_size_t(0)

        def text_of(pointer):
            if not pointer:
                raise Error(error.value.decode("utf-8", errors="replace"))
            return ctypes.string_at(pointer, length.value).decode("utf-8")

        try:
            for token in prompt:  # the stream continues the prompt
                text_of(_lib.attnrt_detokenizer_step(stream, int(token), ctypes.byref(length),
                                                     error, size))
            logits = self._prefill(prompt, all_logits=False)
            row = logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            for _ in range(max_tokens):
                token = _lib.attnrt_sample(sampler, row, self.vocab_size)
                if token < 0 or _lib.attnrt_tokenizer_is_eos(self._tokenizer, token):
                    break
                piece = text_of(_lib.attnrt_detokenizer_step(stream, token, ctypes.byref(length),
                                                             error, size))
                if piece:
                    yield piece
                rc = _lib.attnrt_decode(self._session, token, row, error, size)
                _raise_if(rc != 0, error)
            rest = text_of(_lib.attnrt_detokenizer_flush(stream, ctypes.byref(length),
                                                         error, size))
            if rest:
                yield rest
        finally:
            _lib.attnrt_detokenizer_free(stream)
            _lib.attnrt_sampler_free(sampler)

    # -- perplexity ---------------------------------------------------------------

    def perplexity(self, text, ctx=256, chunks=0):
        """attn-perplexity's perplexity of `text` (docs/perplexity.md): the
        ids cut into windows of `ctx` (a last partial one dropped; `chunks` >
        0 keeps the first ones), each scored from an empty cache on its
        tokens 1 .. ctx-1; exp of the mean negative log-likelihood."""
        ids = self._ids(self.tokenize(text))
        if not isinstance(ctx, int) or ctx < 2:
            raise ValueError(f"ctx must be an int >= 2, got {ctx!r}")
        if ctx > self.max_seq:
            raise Error(f"ctx {ctx} exceeds the model's context of {self.max_seq} positions")
        windows = len(ids) // ctx
        if chunks:
            windows = min(windows, chunks)
        if windows == 0:
            raise Error(f"the text encodes to {len(ids)} tokens, fewer than one window "
                        f"of {ctx}")
        total, count = 0.0, 0
        for w in range(windows):
            window = ids[w * ctx:(w + 1) * ctx]
            logits = self._prefill(window, all_logits=True)[:-1].astype(np.float64)
            top = logits.max(axis=1, keepdims=True)
            logsumexp = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
            total += float((logsumexp - logits[np.arange(ctx - 1), window[1:]]).sum())
            count += ctx - 1
        return math.exp(total / count)
