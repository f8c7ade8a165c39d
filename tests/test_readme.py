"""Every Python example in the README runs as written (in order, sharing one namespace).

The quick start talks to a gateway at ``http://127.0.0.1:8000``; here that gateway (the same
app ``deepseek-recipe serve`` runs, demo engine) listens on a free port, and the examples get
its address instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deepseek_recipe.gateway import GatewaySettings, create_app
from tests.gateway_support import serving

README = Path(__file__).resolve().parents[1] / "README.md"
QUICK_START_URL = "http://127.0.0.1:8000"


def test_readme_python_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 4
    assert any(QUICK_START_URL in block for block in blocks)
    namespace: dict[str, object] = {}
    with serving(create_app(GatewaySettings(log_requests=False))) as server:
        for block in blocks:
            code = block.replace(QUICK_START_URL, server.url)
            exec(compile(code, str(README), "exec"), namespace)
    out = capsys.readouterr().out
    assert "You said: “Hello!”" in out  # the OpenAI quick start
    assert "You said: “Hi!”" in out  # the Anthropic one, streamed


def test_readme_set_up_commands_are_the_scripts() -> None:
    text = README.read_text(encoding="utf-8")
    assert "    bash scripts/run.sh\n" in text and "    bash scripts/test.sh\n" in text


# What a clone of the repository does not have: the team's shared folder and the reference's
# written description. Spelled as patterns so that this file does not match itself.
OUTSIDE = re.compile(rb"behavior\.md|\.\./shared|/work/share[d]")
# Folders that are not the repository's own text: build output, environments, caches.
SKIPPED_DIRS = {".git", "node_modules", "__pycache__", "artifacts"}


def test_no_file_points_outside_the_repository() -> None:
    root = README.parent
    offenders = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if any(
            p in SKIPPED_DIRS or p.startswith((".venv", "target", ".data", ".pytest", ".mypy", ".ruff")) for p in parts
        ):
            continue
        if path.is_file() and OUTSIDE.search(path.read_bytes()):
            offenders.append(str(path.relative_to(root)))
    assert offenders == []
