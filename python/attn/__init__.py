"""Attn from Python: models compiled by attn-compile, run by libattnrt.

    import attn
    m = attn.Model("../shared/models/austen-llama")   # compiled on first use, cached
    print(m.generate("It is", max_tokens=8))
    for piece in m.generate("It is", max_tokens=8, stream=True):
        print(piece, end="", flush=True)
    m.logits(m.tokenize("It is"))                      # numpy [n, vocab] float32
    m.perplexity(open("book.txt").read())             # attn-perplexity's method
    m.attention(m.tokenize("It is"))                   # [layers, heads, n, n] softmax weights
    m.apply_chat_template([{"role": "user", "content": "Hi"}],
                          add_generation_prompt=True)  # the folder's chat template

Every method is a thin layer over the runtime's C API (ctypes); an error
of the runtime raises attn.Error with the runtime's message.
"""

from ._chat import ChatTemplate
from ._model import Error, Inspection, Model, version

__all__ = ["ChatTemplate", "Error", "Inspection", "Model", "version", "__version__"]
__version__ = version()
