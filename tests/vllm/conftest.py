"""The engine tests: real vLLM processes on loopback, with a tiny model built at test time.

They run in vLLM's own virtualenv (``bash scripts/vllm/test.sh``, which ``scripts/test.sh``
calls): ``DEEPSEEK_RECIPE_VLLM_TESTS=1`` selects them, and then vLLM must be importable. In the
main test run (no vLLM) this folder is not collected.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.vllm.servers import GRPC_FLAGS, PLUGIN_FLAGS, Scripts, VllmServer

ENABLED = os.environ.get("DEEPSEEK_RECIPE_VLLM_TESTS") == "1"
if not ENABLED:
    collect_ignore_glob = ["test_*.py"]
else:
    import vllm  # noqa: F401  (the engine tests need vLLM: fail here, never skip)


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vllm")


@pytest.fixture(scope="session")
def tiny_model(workdir: Path) -> Path:
    out = workdir / "model"
    out.mkdir()
    # A subprocess: torch and transformers warn on import, and the suite turns warnings into errors.
    subprocess.run([sys.executable, str(Path(__file__).with_name("tiny_model.py")), str(out)], check=True)
    return out


@pytest.fixture(scope="session")
def scripts(workdir: Path) -> Scripts:
    return Scripts(workdir / "scripts")


@pytest.fixture(scope="session")
def plugin_vllm(tiny_model: Path, scripts: Scripts, workdir: Path) -> Iterator[VllmServer]:
    """vLLM with this library's renderer and parsers (``--tokenizer-mode deepseek_recipe`` …)."""
    server = VllmServer(tiny_model, scripts, workdir / "plugin.log", PLUGIN_FLAGS)
    try:
        yield server.wait_ready()
    finally:
        server.stop()


@pytest.fixture(scope="session")
def grpc_vllm(tiny_model: Path, scripts: Scripts, workdir: Path) -> Iterator[VllmServer]:
    """vLLM's gRPC entrypoint (``vllm serve --grpc``) with this library's tokenizer mode."""
    server = VllmServer(tiny_model, scripts, workdir / "grpc.log", GRPC_FLAGS, grpc=True)
    try:
        yield server.wait_ready()
    finally:
        server.stop()
