"""Shared fixtures: the default DeepSeek V4 tokenizer, loaded once. Every gateway the tests
start (in this process or as a subprocess) keeps its SQLite store in a temporary directory,
never in the user's real default one."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import deepseek_recipe as dr

_STORE_HOME = tempfile.mkdtemp(prefix="deepseek-recipe-test-data-")
os.environ["XDG_DATA_HOME"] = _STORE_HOME
os.environ["DEEPSEEK_RECIPE_STORE_DIR"] = os.path.join(_STORE_HOME, "deepseek-recipe")
atexit.register(shutil.rmtree, _STORE_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Closes the clients a test made with ``gateway_support.closed_after_test`` (looked up only
    where that module was imported: not every suite's environment has the SDKs it needs)."""
    yield
    support = sys.modules.get("tests.gateway_support")
    if support is not None:
        support.close_clients()


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


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """A PostgreSQL server of the test run's own (Debian's package), shared by the store
    suites (each test makes its own database), stopped at the end."""
    from tests import postgres_support

    with postgres_support.started() as server:
        yield server
