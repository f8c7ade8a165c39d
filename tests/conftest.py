"""Shared fixtures: the default DeepSeek V4 tokenizer, loaded once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import deepseek_recipe as dr


@pytest.fixture(scope="session")
def tokenizer() -> dr.Tokenizer:
    return dr.default_tokenizer()


@pytest.fixture(scope="session")
def tokenizer_json() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(dr.default_tokenizer_path()).read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="session")
def added_vocab(tokenizer_json: dict[str, Any]) -> dict[str, int]:
    return {t["content"]: t["id"] for t in tokenizer_json["added_tokens"]}
