"""This library's tokenizer for the model vLLM serves, loaded once per process (pure: no vLLM)."""

from __future__ import annotations

import os
import threading
from typing import Any

from deepseek_recipe._native import SpecialToken, SpecialTokens, Tokenizer

_lock = threading.Lock()
_tokenizers: dict[str, Tokenizer] = {}


def library_tokenizer(hf_tokenizer: Any, source: str | None = None) -> Tokenizer:
    """The model's own ``tokenizer.json`` as this library's :class:`Tokenizer`.

    ``source`` (or the Hugging Face tokenizer's ``name_or_path``) is read when it is a folder
    holding ``tokenizer.json``; otherwise the fast tokenizer's own JSON is used. Cached by that
    name: vLLM makes a parser per request.
    """
    name = source or getattr(hf_tokenizer, "name_or_path", None) or str(id(hf_tokenizer))
    with _lock:
        cached = _tokenizers.get(name)
        if cached is not None:
            return cached
        path = os.path.join(name, "tokenizer.json")
        if os.path.isfile(path):
            tokenizer = Tokenizer.from_file(path)
        else:
            backend = getattr(hf_tokenizer, "backend_tokenizer", None)
            if backend is None:
                raise ValueError("deepseek_recipe needs the model's tokenizer.json (a Hugging Face fast tokenizer)")
            tokenizer = Tokenizer.from_str(backend.to_str())
        _tokenizers[name] = tokenizer
        return tokenizer


def special_id(tokenizer: Tokenizer, token: SpecialToken) -> int | None:
    """The id of ``token``'s spelling when it is one token of the vocabulary."""
    ids = tokenizer.encode(SpecialTokens().token(token))
    return ids[0] if len(ids) == 1 else None
