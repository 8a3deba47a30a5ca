"""attn.ChatTemplate: a model's chat template, rendered by libattnrt."""

import ctypes
import json

from . import _runtime


class ChatTemplate:
    """A Hugging Face chat template, rendered as transformers'
    apply_chat_template(tokenize=False) renders it (docs/chat-templates.md).

    ChatTemplate(folder) reads the folder's chat_template.jinja, else its
    tokenizer_config.json's chat_template, with the special tokens of
    tokenizer_config.json; ChatTemplate.from_string(source, bos_token,
    eos_token) takes the template text. Immutable: threads may share one.
    """

    def __init__(self, folder):
        from ._model import _raise_if, _runtime_lib
        lib = _runtime_lib()
        error, size = _runtime.error_buffer()
        self._handle = lib.attnrt_chat_template_load(str(folder).encode(), error, size)
        _raise_if(not self._handle, error)

    @classmethod
    def from_string(cls, source, bos_token=None, eos_token=None):
        from ._model import _optional, _raise_if, _runtime_lib
        lib = _runtime_lib()
        error, size = _runtime.error_buffer()
        self = cls.__new__(cls)
        self._handle = lib.attnrt_chat_template_parse(
            str(source).encode(), _optional(bos_token), _optional(eos_token), error, size)
        _raise_if(not self._handle, error)
        return self

    def close(self):
        if getattr(self, "_handle", None):
            from ._model import _runtime_lib
            _runtime_lib().attnrt_chat_template_free(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def apply_chat_template(self, messages, tools=None, documents=None,
                            add_generation_prompt=False, **kwargs):
        """The prompt text of a conversation, as transformers'
        tokenizer.apply_chat_template(messages, tools=tools,
        documents=documents, add_generation_prompt=add_generation_prompt,
        tokenize=False, **kwargs): messages are dicts ({"role", "content"},
        and tool_calls, reasoning_content, ... as the template reads them),
        tools a list of JSON-schema dicts, kwargs template variables such as
        enable_thinking=False. Raises attn.Error with the runtime's message
        (the template's raise_exception, a field of the wrong type)."""
        from ._model import Error, _raise_if, _runtime_lib
        if not getattr(self, "_handle", None):
            raise Error("the chat template is closed")
        options = dict(kwargs)
        options["add_generation_prompt"] = bool(add_generation_prompt)
        if tools is not None:
            options["tools"] = list(tools)
        if documents is not None:
            options["documents"] = list(documents)
        try:
            messages_json = json.dumps(list(messages), ensure_ascii=False, allow_nan=False)
            options_json = json.dumps(options, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise Error(f"the conversation is not JSON: {e}") from None
        messages_bytes = messages_json.encode("utf-8", errors="surrogatepass")
        options_bytes = options_json.encode("utf-8", errors="surrogatepass")
        lib = _runtime_lib()
        error, size = _runtime.error_buffer()
        length = ctypes.c_size_t(0)
        status = lib.attnrt_chat_template_apply_json(
            self._handle, messages_bytes, options_bytes, None, 0, ctypes.byref(length),
            error, size)
        _raise_if(status != 0, error)
        text = ctypes.create_string_buffer(length.value + 1)
        status = lib.attnrt_chat_template_apply_json(
            self._handle, messages_bytes, options_bytes, text, length.value + 1,
            ctypes.byref(length), error, size)
        _raise_if(status != 0, error)
        return text.raw[:length.value].decode("utf-8")
